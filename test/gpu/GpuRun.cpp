//===- GpuRun.cpp - kiln-gpu-run: an artifact, greedy, without MLIR ------===//
//
// Part of Kiln's GPU check (test/gpu/run.sh). Loads a compiled artifact
// with the runtime alone (CompiledModel: no MLIR, so it runs on a machine
// that has only the CUDA driver), generates greedily from a prompt, prints
// the text to stdout and one line of JSON to stderr: the device, prompt and
// generated token counts, and prefill and decode tokens per second.
//
//   kiln-gpu-run ARTIFACT [-p PROMPT] [-n STEPS] [--context N]
//
//===----------------------------------------------------------------------===//

#include "runtime/CompiledModel.h"
#include "runtime/Generator.h"
#include "runtime/Tokenizer.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

using namespace kiln::runtime;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln-gpu-run ARTIFACT [-p PROMPT] [-n STEPS] "
                         "[--context N]\n");
    return 2;
  }
  std::string path = argv[1], prompt;
  int steps = 256;
  int64_t context = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "-p") == 0)
      prompt = argv[i + 1];
    else if (std::strcmp(argv[i], "-n") == 0)
      steps = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--context") == 0)
      context = std::atoll(argv[i + 1]);
    else {
      std::fprintf(stderr, "kiln-gpu-run: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  try {
    CompiledModelOptions options;
    options.contextLength = context;
    auto model = CompiledModel::load(path, options);
    Tokenizer tokenizer(model->tokenizerSpec());
    GenerationOptions generation;
    generation.steps = steps;
    generation.contextLength = int32_t(model->manifest().contextLength);
    generation.sampler.temperature = 0;
    GenerationResult result = generate(
        tokenizer, [&](const StepBatch &batch) { return model->step(batch); },
        prompt, generation,
        [](const std::string &piece) {
          std::fwrite(piece.data(), 1, piece.size(), stdout);
        });
    std::fflush(stdout);
    std::string device = model->cudaDevice();
    if (device.empty())
      device = "cpu: " + model->stepLibrary().name;
    std::fprintf(
        stderr,
        "{\"device\": \"%s\", \"prompt_tokens\": %d, \"decoded_tokens\": "
        "%d, \"prefill_tokens_per_second\": %.2f, "
        "\"decode_tokens_per_second\": %.2f}\n",
        device.c_str(), result.promptTokens, result.decodedTokens,
        result.prefillSeconds > 0 ? result.promptTokens / result.prefillSeconds
                                  : 0.0,
        result.decodeSeconds > 0 ? result.decodedTokens / result.decodeSeconds
                                 : 0.0);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-gpu-run: %s\n", e.what());
    return 1;
  }
  return 0;
}
