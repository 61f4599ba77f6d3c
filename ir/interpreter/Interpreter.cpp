//===- Interpreter.cpp - The reference interpreter of kiln IR -------------===//
//
// Part of Kiln. One function per op, each a direct transcription of the op's
// definition in KilnOps.td, with loops in the obvious order. Accumulations run
// in T (float or double) from index 0 upwards, as llama2.c does.
//
//===----------------------------------------------------------------------===//

#include "ir/interpreter/Interpreter.h"

#include "ir/KilnOps.h"
#include "ir/RopeFrequency.h"
#include "ir/StepContract.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

using namespace mlir;

namespace kiln {

namespace {

std::string describe(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "'" << op->getName() << "' at ";
  op->getLoc().print(os);
  return os.str();
}

[[noreturn]] void fail(Operation *op, const std::string &message) {
  throw InterpreterError("reference interpreter: " + describe(op) + ": " +
                         message);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  return os.str() + "]";
}

template <typename T> T silu(T x) { return x / (T(1) + std::exp(-x)); }

template <typename T> T gelu(T x, bool tanhApproximation) {
  if (tanhApproximation) {
    const T c = T(0.7978845608028654); // sqrt(2 / pi)
    return T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x)));
  }
  return T(0.5) * x * (T(1) + std::erf(x / T(1.4142135623730951)));
}

template <typename T> T relu(T x) { return x > T(0) ? x : T(0); }

template <typename T> T applyActivation(Activation act, T x) {
  switch (act) {
  case Activation::Silu:
    return silu(x);
  case Activation::Gelu:
    return gelu(x, false);
  case Activation::GeluTanh:
    return gelu(x, true);
  case Activation::Relu:
    return relu(x);
  }
  return x;
}

/// Evaluates one function body.
template <typename T> class Frame {
public:
  Frame(WeightProvider &weights, int64_t &cacheVersion)
      : weights(weights), cacheVersion(cacheVersion) {}

  std::vector<RuntimeValue<T>> run(func::FuncOp func,
                                   std::vector<RuntimeValue<T>> args) {
    Block &body = func.getBody().front();
    if (args.size() != body.getNumArguments())
      throw InterpreterError("reference interpreter: @" + func.getName().str() +
                             " takes " +
                             std::to_string(body.getNumArguments()) +
                             " arguments, got " + std::to_string(args.size()));
    for (auto [arg, value] : llvm::zip(body.getArguments(), args)) {
      if (auto *c = std::get_if<CacheValue<T>>(&value))
        latest[c->cache] = c->version;
      values[arg] = std::move(value);
    }
    for (Operation &op : body) {
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        std::vector<RuntimeValue<T>> results;
        for (Value v : ret.getOperands())
          results.push_back(values.at(v));
        return results;
      }
      execute(&op);
    }
    throw InterpreterError("reference interpreter: @" + func.getName().str() +
                           " has no return");
  }

private:
  //===--- Values ---------------------------------------------------------===//

  const Tensor<T> &tensor(Operation *op, Value v) {
    auto it = values.find(v);
    if (it == values.end())
      fail(op, "operand has no value");
    if (auto *t = std::get_if<Tensor<T>>(&it->second))
      return *t;
    fail(op, "operand is not a float tensor");
  }

  const std::vector<int32_t> &indices(Operation *op, Value v) {
    auto it = values.find(v);
    if (it == values.end())
      fail(op, "operand has no value");
    if (auto *t = std::get_if<std::vector<int32_t>>(&it->second))
      return *t;
    fail(op, "operand is not an i32 vector");
  }

  CacheValue<T> cache(Operation *op, Value v) {
    auto it = values.find(v);
    auto *c =
        it == values.end() ? nullptr : std::get_if<CacheValue<T>>(&it->second);
    if (!c || !c->cache)
      fail(op, "operand is not a KV cache");
    if (latest[c->cache] != c->version)
      fail(op, "reads a KV cache value that a later kv_append replaced; the "
               "cache must be threaded linearly");
    return *c;
  }

  /// Stores a result. This may grow `values` and invalidate references
  /// returned by tensor()/indices(): ops read all operands, compute, then
  /// store.
  void set(Value v, RuntimeValue<T> value) { values[v] = std::move(value); }

  static Tensor<T> zeros(std::vector<int64_t> shape) {
    Tensor<T> t;
    t.shape = std::move(shape);
    t.data.assign(t.numElements(), T(0));
    return t;
  }

  /// Checks a run-time shape against the op's result type (static dims).
  void checkResult(Operation *op, Value result, const Tensor<T> &t) {
    auto type = cast<RankedTensorType>(result.getType());
    bool ok = type.getRank() == static_cast<int64_t>(t.shape.size());
    for (int64_t i = 0; ok && i < type.getRank(); ++i)
      ok = type.isDynamicDim(i) || type.getDimSize(i) == t.shape[i];
    if (!ok)
      fail(op, "computed a result of shape " + shapeString(t.shape) +
                   " for a result of type tensor<...> with static dimensions "
                   "that disagree");
  }

  void setTensor(Operation *op, Value result, Tensor<T> t) {
    checkResult(op, result, t);
    set(result, std::move(t));
  }

  void requireRows(Operation *op, const Tensor<T> &t, size_t rank,
                   const char *what) {
    if (t.shape.size() != rank)
      fail(op, std::string(what) + " has rank " +
                   std::to_string(t.shape.size()) + ", expected " +
                   std::to_string(rank));
  }

  //===--- Dispatch -------------------------------------------------------===//

  void execute(Operation *op) {
    llvm::TypeSwitch<Operation *>(op)
        .Case([&](WeightOp o) { weight(o); })
        .Case([&](EmbeddingOp o) { embedding(o); })
        .Case([&](GatherRowsOp o) { gatherRows(o); })
        .Case([&](MatmulOp o) {
          matmul(o, tensor(o, o.getInput()), o.getWeight(), o.getBias(),
                 Value(), std::nullopt);
        })
        .Case([&](FusedMatmulOp o) {
          std::optional<Tensor<T>> normalized = applyPrologue(
              o, o.getInput(), o.getNormWeight(), o.getNormEpsilonAttr());
          matmul(o, normalized ? *normalized : tensor(o, o.getInput()),
                 o.getWeight(), o.getBias(), o.getResidual(),
                 o.getActivation());
        })
        .Case([&](SwigluOp o) { swiglu(o); })
        .Case([&](AddOp o) {
          binary(o, o.getLhs(), o.getRhs(), [](T a, T b) { return a + b; });
        })
        .Case([&](MulOp o) {
          binary(o, o.getLhs(), o.getRhs(), [](T a, T b) { return a * b; });
        })
        .Case([&](SiluOp o) { unary(o, o.getInput(), silu<T>); })
        .Case([&](GeluOp o) {
          bool tanhApprox = o.getTanh();
          unary(o, o.getInput(), [&](T x) { return gelu(x, tanhApprox); });
        })
        .Case([&](ReluOp o) { unary(o, o.getInput(), relu<T>); })
        .Case([&](ScaleOp o) {
          T factor = T(o.getFactor().convertToDouble());
          unary(o, o.getInput(), [&](T x) { return x * factor; });
        })
        .Case([&](SoftmaxOp o) { softmax(o); })
        .Case([&](RmsNormOp o) { rmsNorm(o); })
        .Case([&](LayerNormOp o) { layerNorm(o); })
        .Case([&](RopeOp o) { rope(o); })
        .Case([&](ReshapeOp o) { reshape(o); })
        .Case([&](TransposeOp o) { transpose(o); })
        .Case([&](SplitOp o) { split(o); })
        .Case([&](ConcatOp o) { concat(o); })
        .Case([&](KVAppendOp o) { kvAppend(o); })
        .Case([&](KVReadOp o) { kvRead(o); })
        .Case([&](AttentionScoresOp o) { attentionScores(o); })
        .Case([&](AttentionMaskOp o) { attentionMask(o); })
        .Case([&](AttentionOutputOp o) { attentionOutput(o); })
        .Case([&](AttentionOp o) { attention(o); })
        .Case([&](arith::ConstantOp o) { constant(o); })
        .Case([&](tensor::CastOp o) {
          set(o.getResult(), values.at(o.getSource()));
        })
        .Default([&](Operation *) {
          fail(op, "the reference interpreter does not know this op");
        });
  }

  //===--- Weights and embedding ------------------------------------------===//

  void weight(WeightOp op) {
    RankedTensorType type = op.getType();
    Tensor<T> t;
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    t.borrowed = weights.getWeight(op.getName(), type);
    set(op.getResult(), std::move(t));
  }

  void embedding(EmbeddingOp op) {
    const Tensor<T> &table = tensor(op, op.getTable());
    const std::vector<int32_t> &ids = indices(op, op.getIds());
    int64_t vocab = table.shape[0], dim = table.shape[1];
    Tensor<T> out = zeros({static_cast<int64_t>(ids.size()), dim});
    for (size_t t = 0; t < ids.size(); ++t) {
      if (ids[t] < 0 || ids[t] >= vocab)
        fail(op, "token id " + std::to_string(ids[t]) +
                     " is outside the vocabulary [0, " + std::to_string(vocab) +
                     ")");
      for (int64_t i = 0; i < dim; ++i)
        out.data[t * dim + i] = table.at(ids[t] * dim + i);
    }
    setTensor(op, op.getResult(), std::move(out));
  }

  void gatherRows(GatherRowsOp op) {
    const Tensor<T> &in = tensor(op, op.getInput());
    const std::vector<int32_t> &rows = indices(op, op.getRows());
    int64_t n = in.shape[0];
    int64_t rowSize = n ? in.numElements() / n : 0;
    std::vector<int64_t> shape = in.shape;
    shape[0] = static_cast<int64_t>(rows.size());
    Tensor<T> out = zeros(shape);
    for (size_t r = 0; r < rows.size(); ++r) {
      if (rows[r] < 0 || rows[r] >= n)
        fail(op, "row " + std::to_string(rows[r]) + " is outside [0, " +
                     std::to_string(n) + ")");
      for (int64_t i = 0; i < rowSize; ++i)
        out.data[r * rowSize + i] = in.at(rows[r] * rowSize + i);
    }
    setTensor(op, op.getResult(), std::move(out));
  }

  //===--- Matmuls --------------------------------------------------------===//

  /// y[m, n] = sum_k x[m, k] * w[n, k].
  Tensor<T> matmulCore(Operation *op, const Tensor<T> &x, const Tensor<T> &w) {
    requireRows(op, x, 2, "input");
    requireRows(op, w, 2, "weight");
    int64_t m = x.shape[0], k = x.shape[1], n = w.shape[0];
    if (w.shape[1] != k)
      fail(op, "input has K = " + std::to_string(k) +
                   " but the weight has K = " + std::to_string(w.shape[1]));
    Tensor<T> y = zeros({m, n});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t l = 0; l < k; ++l)
          acc += x.at(i * k + l) * w.at(j * k + l);
        y.data[i * n + j] = acc;
      }
    return y;
  }

  /// The input of a matmul-like op after its rms_norm prologue (exactly what
  /// a kiln.rms_norm before the op would have produced), or nothing when the
  /// op has no prologue and reads `input` as it is.
  std::optional<Tensor<T>> applyPrologue(Operation *op, Value input,
                                         Value normWeight,
                                         FloatAttr normEpsilon) {
    if (!normWeight)
      return std::nullopt;
    return rmsNormRows(tensor(op, input), tensor(op, normWeight),
                       T(normEpsilon.getValueAsDouble()));
  }

  void matmul(Operation *op, const Tensor<T> &x, Value weight, Value bias,
              Value residual, std::optional<Activation> activation) {
    Tensor<T> y = matmulCore(op, x, tensor(op, weight));
    int64_t m = y.shape[0], n = y.shape[1];
    const Tensor<T> *b = bias ? &tensor(op, bias) : nullptr;
    const Tensor<T> *r = residual ? &tensor(op, residual) : nullptr;
    if (r && r->shape != y.shape)
      fail(op, "residual has shape " + shapeString(r->shape) +
                   ", the product " + shapeString(y.shape));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T v = y.data[i * n + j];
        if (b)
          v += b->at(j);
        if (activation)
          v = applyActivation(*activation, v);
        if (r)
          v += r->at(i * n + j);
        y.data[i * n + j] = v;
      }
    setTensor(op, op->getResult(0), std::move(y));
  }

  void swiglu(SwigluOp op) {
    std::optional<Tensor<T>> normalized = applyPrologue(
        op, op.getInput(), op.getNormWeight(), op.getNormEpsilonAttr());
    const Tensor<T> &x = normalized ? *normalized : tensor(op, op.getInput());
    Tensor<T> gate = matmulCore(op, x, tensor(op, op.getGate()));
    Tensor<T> up = matmulCore(op, x, tensor(op, op.getUp()));
    for (size_t i = 0; i < gate.data.size(); ++i)
      gate.data[i] = silu(gate.data[i]) * up.data[i];
    setTensor(op, op.getResult(), std::move(gate));
  }

  //===--- Element-wise ---------------------------------------------------===//

  template <typename F> void unary(Operation *op, Value input, F f) {
    const Tensor<T> &x = tensor(op, input);
    Tensor<T> y = zeros(x.shape);
    for (int64_t i = 0; i < x.numElements(); ++i)
      y.data[i] = f(x.at(i));
    setTensor(op, op->getResult(0), std::move(y));
  }

  template <typename F> void binary(Operation *op, Value lhs, Value rhs, F f) {
    const Tensor<T> &a = tensor(op, lhs);
    const Tensor<T> &b = tensor(op, rhs);
    if (a.shape != b.shape)
      fail(op, "operand shapes " + shapeString(a.shape) + " and " +
                   shapeString(b.shape) + " differ");
    Tensor<T> y = zeros(a.shape);
    for (int64_t i = 0; i < a.numElements(); ++i)
      y.data[i] = f(a.at(i), b.at(i));
    setTensor(op, op->getResult(0), std::move(y));
  }

  /// Number of elements in the last dimension, and of rows before it.
  static std::pair<int64_t, int64_t> rowsAndWidth(const Tensor<T> &x) {
    int64_t width = x.shape.empty() ? 1 : x.shape.back();
    return {width ? x.numElements() / width : 0, width};
  }

  void softmax(SoftmaxOp op) {
    const Tensor<T> &x = tensor(op, op.getInput());
    auto [rows, width] = rowsAndWidth(x);
    Tensor<T> y = zeros(x.shape);
    for (int64_t r = 0; r < rows; ++r) {
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t i = 0; i < width; ++i)
        max = std::max(max, x.at(r * width + i));
      // A row masked entirely has no distribution; it stays all zeros.
      if (max == -std::numeric_limits<T>::infinity())
        continue;
      T sum = 0;
      for (int64_t i = 0; i < width; ++i) {
        T e = std::exp(x.at(r * width + i) - max);
        y.data[r * width + i] = e;
        sum += e;
      }
      for (int64_t i = 0; i < width; ++i)
        y.data[r * width + i] /= sum;
    }
    setTensor(op, op.getResult(), std::move(y));
  }

  //===--- Norms and rotary embedding -------------------------------------===//

  void rmsNorm(RmsNormOp op) {
    setTensor(op, op.getResult(),
              rmsNormRows(tensor(op, op.getInput()), tensor(op, op.getWeight()),
                          T(op.getEpsilon().convertToDouble())));
  }

  /// y[r, i] = w[i] * x[r, i] / sqrt(mean_j x[r, j]² + eps), as llama2.c.
  static Tensor<T> rmsNormRows(const Tensor<T> &x, const Tensor<T> &w, T eps) {
    auto [rows, width] = rowsAndWidth(x);
    Tensor<T> y = zeros(x.shape);
    for (int64_t r = 0; r < rows; ++r) {
      T ss = 0;
      for (int64_t i = 0; i < width; ++i)
        ss += x.at(r * width + i) * x.at(r * width + i);
      ss /= T(width);
      ss += eps;
      T scale = T(1) / std::sqrt(ss);
      for (int64_t i = 0; i < width; ++i)
        y.data[r * width + i] = w.at(i) * (scale * x.at(r * width + i));
    }
    return y;
  }

  void layerNorm(LayerNormOp op) {
    const Tensor<T> &x = tensor(op, op.getInput());
    const Tensor<T> &w = tensor(op, op.getWeight());
    const Tensor<T> *b = op.getBias() ? &tensor(op, op.getBias()) : nullptr;
    T eps = T(op.getEpsilon().convertToDouble());
    auto [rows, width] = rowsAndWidth(x);
    Tensor<T> y = zeros(x.shape);
    for (int64_t r = 0; r < rows; ++r) {
      T mean = 0, var = 0;
      for (int64_t i = 0; i < width; ++i)
        mean += x.at(r * width + i);
      mean /= T(width);
      for (int64_t i = 0; i < width; ++i) {
        T d = x.at(r * width + i) - mean;
        var += d * d;
      }
      var /= T(width);
      T scale = T(1) / std::sqrt(var + eps);
      for (int64_t i = 0; i < width; ++i)
        y.data[r * width + i] = (x.at(r * width + i) - mean) * scale * w.at(i) +
                                (b ? b->at(i) : T(0));
    }
    setTensor(op, op.getResult(), std::move(y));
  }

  void rope(RopeOp op) {
    const Tensor<T> &x = tensor(op, op.getInput());
    const std::vector<int32_t> &pos = indices(op, op.getPositions());
    requireRows(op, x, 3, "input");
    int64_t tokens = x.shape[0], heads = x.shape[1], d = x.shape[2];
    if (static_cast<int64_t>(pos.size()) != tokens)
      fail(op, std::to_string(pos.size()) + " positions for " +
                   std::to_string(tokens) + " tokens");
    bool adjacent = op.getLayout() == RopeLayout::Adjacent;
    Tensor<T> y = copyOf(x);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t i = 0; i < d / 2; ++i) {
        T angle = T(pos[t]) * ropeInverseFrequency<T>(op, i, d);
        T c = std::cos(angle), s = std::sin(angle);
        for (int64_t h = 0; h < heads; ++h) {
          int64_t base = (t * heads + h) * d;
          int64_t a = base + (adjacent ? 2 * i : i);
          int64_t b = base + (adjacent ? 2 * i + 1 : i + d / 2);
          T xa = x.at(a), xb = x.at(b);
          y.data[a] = xa * c - xb * s;
          y.data[b] = xa * s + xb * c;
        }
      }
    setTensor(op, op.getResult(), std::move(y));
  }

  //===--- Views ----------------------------------------------------------===//

  static Tensor<T> copyOf(const Tensor<T> &x) {
    Tensor<T> y = zeros(x.shape);
    for (int64_t i = 0; i < x.numElements(); ++i)
      y.data[i] = x.at(i);
    return y;
  }

  void reshape(ReshapeOp op) {
    const Tensor<T> &x = tensor(op, op.getInput());
    RankedTensorType type = op.getType();
    std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
    int64_t known = 1, dynamic = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (ShapedType::isDynamic(shape[i])) {
        if (dynamic >= 0)
          fail(op, "the interpreter resolves at most one dynamic dimension");
        dynamic = static_cast<int64_t>(i);
      } else {
        known *= shape[i];
      }
    }
    if (dynamic >= 0)
      shape[dynamic] = known ? x.numElements() / known : 0;
    Tensor<T> y = copyOf(x);
    y.shape = shape;
    if (y.numElements() != x.numElements())
      fail(op, "cannot reshape " + shapeString(x.shape) + " to " +
                   shapeString(shape));
    setTensor(op, op.getResult(), std::move(y));
  }

  static std::vector<int64_t> strides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
      s[i] = s[i + 1] * shape[i + 1];
    return s;
  }

  void transpose(TransposeOp op) {
    const Tensor<T> &x = tensor(op, op.getInput());
    ArrayRef<int64_t> perm = op.getPermutation();
    std::vector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(x.shape[p]);
    Tensor<T> y = zeros(shape);
    std::vector<int64_t> inStrides = strides(x.shape);
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t flat = 0; flat < y.numElements(); ++flat) {
      int64_t src = 0;
      for (size_t j = 0; j < shape.size(); ++j)
        src += index[j] * inStrides[perm[j]];
      y.data[flat] = x.at(src);
      for (int64_t j = static_cast<int64_t>(shape.size()) - 1; j >= 0; --j) {
        if (++index[j] < shape[j])
          break;
        index[j] = 0;
      }
    }
    setTensor(op, op.getResult(), std::move(y));
  }

  /// Sizes before the axis (outer), along it, and after it (inner).
  static void aroundAxis(const std::vector<int64_t> &shape, int64_t axis,
                         int64_t &outer, int64_t &inner) {
    outer = inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= shape[i];
    for (size_t i = axis + 1; i < shape.size(); ++i)
      inner *= shape[i];
  }

  void split(SplitOp op) {
    const Tensor<T> &x = tensor(op, op.getInput());
    int64_t axis = op.getAxis(), outer, inner;
    aroundAxis(x.shape, axis, outer, inner);
    int64_t offset = 0;
    // Results are stored after the loop: storing one may grow `values` and
    // invalidate `x`.
    std::vector<Tensor<T>> slices;
    for (Value result : op.getResults()) {
      int64_t size = cast<RankedTensorType>(result.getType()).getDimSize(axis);
      if (ShapedType::isDynamic(size))
        fail(op, "the interpreter needs static slice sizes");
      std::vector<int64_t> shape = x.shape;
      shape[axis] = size;
      Tensor<T> y = zeros(shape);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t a = 0; a < size; ++a)
          for (int64_t i = 0; i < inner; ++i)
            y.data[(o * size + a) * inner + i] =
                x.at((o * x.shape[axis] + offset + a) * inner + i);
      offset += size;
      slices.push_back(std::move(y));
    }
    if (offset != x.shape[axis])
      fail(op, "slices cover " + std::to_string(offset) + " of " +
                   std::to_string(x.shape[axis]) + " along the axis");
    for (auto [result, slice] : llvm::zip(op.getResults(), slices))
      setTensor(op, result, std::move(slice));
  }

  /// Inputs may be weights (the QKV fusion packs them): those are borrowed
  /// from the weight provider, already dequantized, and read through at().
  void concat(ConcatOp op) {
    int64_t axis = op.getAxis();
    std::vector<const Tensor<T> *> parts;
    for (Value v : op.getInputs())
      parts.push_back(&tensor(op, v));
    std::vector<int64_t> shape = parts[0]->shape;
    shape[axis] = 0;
    for (const Tensor<T> *p : parts)
      shape[axis] += p->shape[axis];
    int64_t outer, inner;
    aroundAxis(shape, axis, outer, inner);
    Tensor<T> y = zeros(shape);
    int64_t offset = 0;
    for (const Tensor<T> *p : parts) {
      int64_t size = p->shape[axis];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t a = 0; a < size; ++a)
          for (int64_t i = 0; i < inner; ++i)
            y.data[(o * shape[axis] + offset + a) * inner + i] =
                p->at((o * size + a) * inner + i);
      offset += size;
    }
    setTensor(op, op.getResult(), std::move(y));
  }

  //===--- KV cache -------------------------------------------------------===//

  void checkTokens(Operation *op, size_t count, int64_t tokens,
                   const char *what) {
    if (static_cast<int64_t>(count) != tokens)
      fail(op, std::to_string(count) + " " + what + " for " +
                   std::to_string(tokens) + " tokens");
  }

  void kvAppend(KVAppendOp op) {
    CacheValue<T> c = cache(op, op.getCache());
    const Tensor<T> &k = tensor(op, op.getKeys());
    const Tensor<T> &v = tensor(op, op.getValues());
    const std::vector<int32_t> &seq = indices(op, op.getSeqIds());
    const std::vector<int32_t> &pos = indices(op, op.getPositions());
    int64_t tokens = k.shape[0];
    checkTokens(op, seq.size(), tokens, "sequence ids");
    checkTokens(op, pos.size(), tokens, "positions");
    int64_t entry = k.numElements() / std::max<int64_t>(tokens, 1);
    std::vector<T> kRow(entry), vRow(entry);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < entry; ++i) {
        kRow[i] = k.at(t * entry + i);
        vRow[i] = v.at(t * entry + i);
      }
      c.cache->append(op.getLayer(), seq[t], pos[t], kRow.data(), vRow.data());
    }
    c.version = ++cacheVersion;
    latest[c.cache] = c.version;
    set(op.getResult(), c);
  }

  /// The number of positions a step attends over: max(positions) + 1.
  static int64_t contextLength(const std::vector<int32_t> &pos) {
    int64_t s = 0;
    for (int32_t p : pos)
      s = std::max<int64_t>(s, int64_t(p) + 1);
    return s;
  }

  void kvRead(KVReadOp op) {
    CacheValue<T> c = cache(op, op.getCache());
    const std::vector<int32_t> &seq = indices(op, op.getSeqIds());
    const std::vector<int32_t> &pos = indices(op, op.getPositions());
    int64_t tokens = static_cast<int64_t>(pos.size());
    checkTokens(op, seq.size(), tokens, "sequence ids");
    int64_t s = contextLength(pos);
    int64_t hkv = c.cache->kvHeads(), d = c.cache->headSize();
    Tensor<T> keys = zeros({tokens, s, hkv, d});
    Tensor<T> vals = zeros({tokens, s, hkv, d});
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t p = 0; p < s; ++p) {
        int64_t at = (t * s + p) * hkv * d;
        c.cache->read(op.getLayer(), seq[t], static_cast<int32_t>(p),
                      &keys.data[at], &vals.data[at]);
      }
    setTensor(op, op.getKeys(), std::move(keys));
    setTensor(op, op.getValues(), std::move(vals));
  }

  //===--- Attention ------------------------------------------------------===//

  void attentionScores(AttentionScoresOp op) {
    const Tensor<T> &q = tensor(op, op.getQuery());
    const Tensor<T> &k = tensor(op, op.getKeys());
    int64_t tokens = q.shape[0], h = q.shape[1], d = q.shape[2];
    int64_t s = k.shape[1], hkv = k.shape[2], group = h / hkv;
    Tensor<T> y = zeros({tokens, h, s});
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t head = 0; head < h; ++head)
        for (int64_t p = 0; p < s; ++p) {
          T acc = 0;
          for (int64_t i = 0; i < d; ++i)
            acc += q.at((t * h + head) * d + i) *
                   k.at(((t * s + p) * hkv + head / group) * d + i);
          y.data[(t * h + head) * s + p] = acc;
        }
    setTensor(op, op.getResult(), std::move(y));
  }

  /// Whether token position `pos` sees position `p` (causal, with window).
  static bool visible(int64_t p, int64_t pos, std::optional<uint64_t> window) {
    if (p > pos)
      return false;
    return !window || p > pos - static_cast<int64_t>(*window);
  }

  void attentionMask(AttentionMaskOp op) {
    const Tensor<T> &scores = tensor(op, op.getScores());
    const std::vector<int32_t> &pos = indices(op, op.getPositions());
    int64_t tokens = scores.shape[0], h = scores.shape[1], s = scores.shape[2];
    checkTokens(op, pos.size(), tokens, "positions");
    Tensor<T> y = copyOf(scores);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t head = 0; head < h; ++head)
        for (int64_t p = 0; p < s; ++p)
          if (!visible(p, pos[t], op.getWindow()))
            y.data[(t * h + head) * s + p] =
                -std::numeric_limits<T>::infinity();
    setTensor(op, op.getResult(), std::move(y));
  }

  void attentionOutput(AttentionOutputOp op) {
    const Tensor<T> &probs = tensor(op, op.getProbs());
    const Tensor<T> &v = tensor(op, op.getValues());
    int64_t tokens = probs.shape[0], h = probs.shape[1], s = probs.shape[2];
    int64_t hkv = v.shape[2], d = v.shape[3], group = h / hkv;
    if (v.shape[1] != s)
      fail(op, "probabilities over " + std::to_string(s) +
                   " positions but values for " + std::to_string(v.shape[1]));
    Tensor<T> y = zeros({tokens, h, d});
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t head = 0; head < h; ++head)
        for (int64_t p = 0; p < s; ++p) {
          T w = probs.at((t * h + head) * s + p);
          for (int64_t i = 0; i < d; ++i)
            y.data[(t * h + head) * d + i] +=
                w * v.at(((t * s + p) * hkv + head / group) * d + i);
        }
    setTensor(op, op.getResult(), std::move(y));
  }

  /// The fused op, straight from its definition: for each token and head,
  /// scaled scores over the visible positions of its sequence, a softmax, and
  /// the weighted sum of values. Positions are visited from 0 so sums match
  /// the unfused chain exactly (masked terms add exact zeros there).
  void attention(AttentionOp op) {
    CacheValue<T> c = cache(op, op.getCache());
    const Tensor<T> &q = tensor(op, op.getQuery());
    const std::vector<int32_t> &seq = indices(op, op.getSeqIds());
    const std::vector<int32_t> &pos = indices(op, op.getPositions());
    int64_t tokens = q.shape[0], h = q.shape[1], d = q.shape[2];
    checkTokens(op, seq.size(), tokens, "sequence ids");
    checkTokens(op, pos.size(), tokens, "positions");
    int64_t hkv = c.cache->kvHeads(), group = h / hkv;
    T scale = T(op.getScale().convertToDouble());
    std::optional<uint64_t> window = op.getWindow();
    Tensor<T> y = zeros({tokens, h, d});
    std::vector<T> key(hkv * d), value(hkv * d);
    for (int64_t t = 0; t < tokens; ++t) {
      int64_t s = int64_t(pos[t]) + 1;
      std::vector<T> keys(s * hkv * d), values(s * hkv * d);
      for (int64_t p = 0; p < s; ++p)
        c.cache->read(op.getLayer(), seq[t], static_cast<int32_t>(p),
                      &keys[p * hkv * d], &values[p * hkv * d]);
      for (int64_t head = 0; head < h; ++head) {
        int64_t kvHead = head / group;
        std::vector<T> score(s, -std::numeric_limits<T>::infinity());
        T max = -std::numeric_limits<T>::infinity();
        for (int64_t p = 0; p < s; ++p) {
          if (!visible(p, pos[t], window))
            continue;
          T acc = 0;
          for (int64_t i = 0; i < d; ++i)
            acc +=
                q.at((t * h + head) * d + i) * keys[(p * hkv + kvHead) * d + i];
          score[p] = acc * scale;
          max = std::max(max, score[p]);
        }
        T sum = 0;
        for (int64_t p = 0; p < s; ++p) {
          score[p] =
              visible(p, pos[t], window) ? std::exp(score[p] - max) : T(0);
          sum += score[p];
        }
        for (int64_t p = 0; p < s; ++p) {
          T w = score[p] / sum;
          for (int64_t i = 0; i < d; ++i)
            y.data[(t * h + head) * d + i] +=
                w * values[(p * hkv + kvHead) * d + i];
        }
      }
    }
    setTensor(op, op.getResult(), std::move(y));
  }

  //===--- Upstream ops ---------------------------------------------------===//

  void constant(arith::ConstantOp op) {
    auto dense = dyn_cast<DenseElementsAttr>(op.getValue());
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!dense || !type)
      fail(op, "only dense tensor constants are supported");
    if (type.getElementType().isSignlessInteger(32) && type.getRank() == 1) {
      std::vector<int32_t> v;
      for (const APInt &x : dense.getValues<APInt>())
        v.push_back(static_cast<int32_t>(x.getSExtValue()));
      set(op.getResult(), std::move(v));
      return;
    }
    if (!isa<FloatType>(type.getElementType()))
      fail(op, "constant of unsupported element type");
    Tensor<T> t;
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    for (const APFloat &x : dense.getValues<APFloat>())
      t.data.push_back(T(x.convertToDouble()));
    set(op.getResult(), std::move(t));
  }

  WeightProvider &weights;
  int64_t &cacheVersion;
  llvm::DenseMap<Value, RuntimeValue<T>> values;
  std::map<const void *, int64_t> latest;
};

} // namespace

template <typename T>
std::vector<RuntimeValue<T>>
Interpreter<T>::call(func::FuncOp func, std::vector<RuntimeValue<T>> args) {
  return Frame<T>(weights, cacheVersion).run(func, std::move(args));
}

template <typename T>
Tensor<T> Interpreter<T>::step(func::FuncOp step,
                               const runtime::StepBatch &batch,
                               ReferenceKVCache<T> &cache) {
  if (failed(verifyStepFunction(step)))
    throw InterpreterError("reference interpreter: @" + step.getName().str() +
                           " is not a step function");
  std::vector<RuntimeValue<T>> args;
  args.emplace_back(batch.tokens);
  args.emplace_back(batch.positions);
  args.emplace_back(batch.seqIds);
  args.emplace_back(batch.logitRows);
  args.emplace_back(CacheValue<T>{&cache, cacheVersion});
  std::vector<RuntimeValue<T>> results = call(step, std::move(args));
  return std::get<Tensor<T>>(std::move(results.at(0)));
}

func::FuncOp findStepFunction(ModuleOp module) {
  func::FuncOp named;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func->hasAttr(KilnDialect::kStepAttrName))
      return func;
    if (func.getName() == "step")
      named = func;
  }
  if (!named)
    throw InterpreterError("the module has no step function (a func.func "
                           "marked kiln.step)");
  return named;
}

template class Interpreter<float>;
template class Interpreter<double>;

} // namespace kiln
