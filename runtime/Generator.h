//===- Generator.h - Text generation over any step executor -----*- C++ -*-===//
//
// Part of Kiln. llama2.c's generation loop on top of the step contract: the
// prompt (BOS first) is prefilled in one step, then one token per step is
// sampled and streamed. `steps` counts positions, prompt included, as in
// llama2.c; generation stops early at BOS, at an end token the caller names
// (EOS/EOT of GGUF and Hugging Face vocabularies), or at the context length.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_GENERATOR_H
#define KILN_RUNTIME_GENERATOR_H

#include "runtime/Sampler.h"
#include "runtime/StepBatch.h"
#include "runtime/Tokenizer.h"

#include <functional>
#include <string>
#include <vector>

namespace kiln::runtime {

/// Runs one step of one model: logits [R, V] row-major for batch.logitRows.
using StepFunction = std::function<std::vector<float>(const StepBatch &)>;

struct GenerationOptions {
  int32_t steps = 256;
  int32_t contextLength = 0;       ///< Positions the model may use.
  std::vector<int32_t> stopTokens; ///< Besides BOS (llama2.c's stop).
  SamplerOptions sampler;
  /// Whether the prompt's pieces are emitted before the generated ones
  /// (llama2.c prints its prompt; a chat prints only the reply).
  bool echoPrompt = true;
};

struct GenerationResult {
  std::vector<int32_t> tokens; ///< Prompt (with BOS) and generated ids.
  int32_t promptTokens = 0;
  double prefillSeconds = 0;
  double decodeSeconds = 0;
  int32_t decodedTokens = 0; ///< Tokens sampled.
  bool hitContextLimit = false;
  /// The token that stopped generation (BOS or one of stopTokens; not in
  /// `tokens`), or -1 when it ran out of steps or context.
  int32_t stopToken = -1;
};

/// llama2.c's safe_printf rule: a piece that is one byte that is neither
/// printable nor whitespace is not printed.
bool isPrintablePiece(const std::string &piece);

/// Generates from `prompt`; `emit` receives each printable piece as soon as
/// it is known (llama2.c's printing rules: unprintable single bytes are
/// dropped).
GenerationResult generate(const Tokenizer &tokenizer, const StepFunction &step,
                          const std::string &prompt,
                          const GenerationOptions &options,
                          const std::function<void(const std::string &)> &emit);

/// The same from a prompt already encoded (a chat's rendered prompt, whose
/// BOS the template decides); `promptIds` must not be empty. A stop token
/// ends generation without being emitted or kept in the result.
GenerationResult
generateFromIds(const Tokenizer &tokenizer, const StepFunction &step,
                const std::vector<int32_t> &promptIds,
                const GenerationOptions &options,
                const std::function<void(const std::string &)> &emit);

} // namespace kiln::runtime

#endif // KILN_RUNTIME_GENERATOR_H
