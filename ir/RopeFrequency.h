//===- RopeFrequency.h - kiln.rope's rotation frequencies -------*- C++ -*-===//
//
// Part of Kiln. The inverse frequency of each pair of a kiln.rope, after its
// scaling, computed in T: the reference interpreter uses it in float and
// double, the CPU code generator in float to write the kernels' constants,
// so both rotate by exactly the same angles.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_ROPEFREQUENCY_H
#define KILN_IR_ROPEFREQUENCY_H

#include "ir/KilnOps.h"

#include <cmath>
#include <cstdint>

namespace kiln {

/// f_i of pair `i` of a head of size `d`: theta^(-2i/d), then linear scaling
/// (divided by the factor), llama3 scaling (high frequencies kept, low
/// ones divided by the factor, a blend in between, by wavelength against the
/// original context) or factors scaling (divided by the pair's own factor,
/// then by the common one, the order llama.cpp applies rope_freqs and its
/// frequency scale in).
template <typename T> T ropeInverseFrequency(RopeOp op, int64_t i, int64_t d) {
  T theta = T(op.getTheta().convertToDouble());
  T freq = T(1) / std::pow(theta, T(2 * i) / T(d));
  RopeScalingAttr scaling = op.getScalingAttr();
  if (!scaling)
    return freq;
  T factor = T(scaling.getFactor().convertToDouble());
  if (scaling.getKind() == RopeScalingKind::Linear)
    return freq / factor;
  if (scaling.getKind() == RopeScalingKind::Factors)
    return freq / T(scaling.getFreqFactors()[i]) / factor;
  T lowFactor = T(scaling.getLowFreqFactor().convertToDouble());
  T highFactor = T(scaling.getHighFreqFactor().convertToDouble());
  T context = T(scaling.getOriginalContext());
  T wavelength = T(2 * M_PI) / freq;
  T lowWavelength = context / lowFactor, highWavelength = context / highFactor;
  if (wavelength < highWavelength)
    return freq;
  if (wavelength > lowWavelength)
    return freq / factor;
  T smooth = (context / wavelength - lowFactor) / (highFactor - lowFactor);
  return (T(1) - smooth) * freq / factor + smooth * freq;
}

} // namespace kiln

#endif // KILN_IR_ROPEFREQUENCY_H
