//===- DemoCommand.h - kiln demo ---------------------------------*- C++
//-*-===//
//
// Part of Kiln's command line. `kiln demo` shows Kiln's main job end to end
// on a model it makes itself (Kiln ships no third-party weights): a
// synthetic Llama with random weights, compiled for this machine into an
// artifact, a short generation from it, and a quick benchmark; then where
// the artifact and its generated kernels are.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_DEMOCOMMAND_H
#define KILN_TOOLS_KILN_DEMOCOMMAND_H

#include <string>

namespace kiln {

struct DemoOptions {
  std::string config = "llama-110m";
  std::string dir = "kiln-demo";
  std::string target = "native";
  int threads = 0;
};

int runDemo(const DemoOptions &options);

} // namespace kiln

#endif // KILN_TOOLS_KILN_DEMOCOMMAND_H
