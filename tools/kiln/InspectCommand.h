//===- InspectCommand.h - kiln inspect --------------------------*- C++ -*-===//
//
// Part of Kiln's command line. `kiln inspect PATH` prints what Kiln reads
// from a model file or directory (configuration, metadata, tensors) or from
// an artifact (manifest summary, sections), then for either the tokenizer,
// the BOS/EOS strings a chat template sees, the tokens a chat reply stops
// at, and the chat template: its size and first lines, or which default
// `kiln run --chat` would use.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_INSPECTCOMMAND_H
#define KILN_TOOLS_KILN_INSPECTCOMMAND_H

#include <string>

namespace kiln {

int runInspect(const std::string &path);

} // namespace kiln

#endif // KILN_TOOLS_KILN_INSPECTCOMMAND_H
