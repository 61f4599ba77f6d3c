//===- EngineRun.cpp - kiln run on the engine -----------------------------===//
//
// Part of Kiln's command line. See EngineRun.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/EngineRun.h"

#include "runtime/Generator.h"
#include "tools/kiln/ChatRun.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <stdexcept>

namespace kiln {

using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

/// The prompt as llama2.c prints it while feeding it: the piece of each
/// token after the first, for the positions -n lets it feed.
std::string echoOf(const runtime::Tokenizer &tokenizer,
                   const std::vector<int32_t> &ids, int32_t steps) {
  std::string text;
  int32_t n = int32_t(ids.size());
  for (int32_t i = 0; i < std::min(n - 1, steps); ++i) {
    std::string piece =
        tokenizer.decodePiece(ids[size_t(i)], ids[size_t(i) + 1]);
    if (runtime::isPrintablePiece(piece))
      text += piece;
  }
  return text;
}

std::vector<int32_t> encodePrompt(const runtime::Tokenizer &tokenizer,
                                  const std::string &prompt) {
  std::vector<int32_t> ids = tokenizer.encode(prompt, /*addBos=*/true);
  if (ids.empty())
    throw std::invalid_argument("the prompt encodes to no tokens and the "
                                "vocabulary has no BOS");
  return ids;
}

void write(const std::string &text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

/// Keeps an output on one line.
std::string escapeLine(const std::string &text) {
  std::string out;
  for (char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  return out;
}

void printPercentiles(const char *what, const runtime::LatencyStats &s) {
  if (s.count)
    std::fprintf(stderr, "  %s: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms\n", what,
                 1e3 * s.p50, 1e3 * s.p90, 1e3 * s.p99);
}

} // namespace

int32_t tokensToGenerate(int32_t steps, int32_t promptTokens) {
  return steps >= promptTokens ? steps - promptTokens + 1 : 0;
}

int runOnePrompt(runtime::Engine &engine, const std::string &prompt,
                 const EngineRunOptions &o) {
  const runtime::Tokenizer &tokenizer = engine.tokenizer();
  std::vector<int32_t> ids = encodePrompt(tokenizer, prompt);
  write(echoOf(tokenizer, ids, o.steps));
  runtime::GenerationResult timing;
  timing.promptTokens = int32_t(ids.size());
  int32_t generate = tokensToGenerate(o.steps, int32_t(ids.size()));
  runtime::TokenEvent last;
  if (generate > 0) {
    runtime::GenerationRequest request;
    request.promptIds = ids;
    request.sampling = o.sampling;
    request.sampling.maxTokens = generate;
    Clock::time_point submitted = Clock::now(), first = submitted;
    auto stream = engine.submit(std::move(request));
    runtime::TokenEvent event;
    while (stream->next(event)) {
      if (event.token >= 0 && ++timing.decodedTokens == 1) {
        first = event.time;
        timing.prefillSeconds = seconds(first - submitted);
      }
      write(event.text);
      if (event.last())
        last = event;
    }
    timing.decodeSeconds = seconds(last.time - first);
  }
  write("\n");
  if (last.finish == runtime::FinishReason::Error) {
    std::fprintf(stderr, "kiln: %s\n", last.error.c_str());
    return 1;
  }
  int64_t context = engine.limits().contextLength;
  if (last.finish == runtime::FinishReason::Length &&
      last.promptTokens + last.generatedTokens > context)
    std::fprintf(stderr,
                 "kiln: stopped at the model's context length of %lld "
                 "positions; --context N raises it\n",
                 static_cast<long long>(context));
  printGenerationTimes(timing);
  return 0;
}

int runPromptFile(runtime::Engine &engine, const std::string &path,
                  int32_t concurrency, const EngineRunOptions &o) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path + ": cannot read the prompts file");
  std::vector<std::string> prompts;
  for (std::string line; std::getline(in, line);)
    prompts.push_back(line);
  const runtime::Tokenizer &tokenizer = engine.tokenizer();

  struct Output {
    std::string text; ///< echo, then generated text
    bool done = false;
    std::string error;
  };
  std::vector<Output> outputs(prompts.size());
  std::mutex mutex;
  std::condition_variable changed;
  size_t nextPrompt = 0;

  // Starts prompts until one is in flight or none are left; called with
  // `mutex` released, from here and from the engine's thread when a
  // request ends (the window then stays `concurrency` wide).
  std::function<void()> startNext = [&] {
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (nextPrompt == prompts.size())
          return;
        i = nextPrompt++;
      }
      std::string echo, error;
      runtime::GenerationRequest request;
      int32_t generate = 0;
      try {
        request.promptIds = encodePrompt(tokenizer, prompts[i]);
        echo = echoOf(tokenizer, request.promptIds, o.steps);
        generate = tokensToGenerate(o.steps, int32_t(request.promptIds.size()));
      } catch (const std::exception &e) {
        error = e.what();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        outputs[i].text = echo;
      }
      if (error.empty() && generate > 0) {
        request.sampling = o.sampling;
        request.sampling.maxTokens = generate;
        request.onToken = [&, i](const runtime::TokenEvent &event) {
          bool ended = event.last();
          {
            std::lock_guard<std::mutex> lock(mutex);
            outputs[i].text += event.text;
            if (event.finish == runtime::FinishReason::Error)
              outputs[i].error = event.error;
            outputs[i].done = ended;
          }
          changed.notify_all();
          if (ended)
            startNext();
        };
        try {
          engine.submit(std::move(request));
          return;
        } catch (const std::exception &e) {
          error = e.what();
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        outputs[i].error = error;
        outputs[i].done = true;
      }
      changed.notify_all();
    }
  };

  Clock::time_point start = Clock::now();
  for (int32_t k = 0; k < concurrency; ++k)
    startNext();
  int failures = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    size_t printed = 0;
    for (;;) {
      std::string fresh;
      bool done;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] {
          return outputs[i].done || outputs[i].text.size() > printed;
        });
        fresh = outputs[i].text.substr(printed);
        printed = outputs[i].text.size();
        done = outputs[i].done;
      }
      write(escapeLine(fresh));
      if (done)
        break;
    }
    write("\n");
    std::lock_guard<std::mutex> lock(mutex);
    if (!outputs[i].error.empty()) {
      std::fprintf(stderr, "kiln: %s:%zu: %s\n", path.c_str(), i + 1,
                   outputs[i].error.c_str());
      ++failures;
    }
  }
  engine.waitIdle();
  double wall = seconds(Clock::now() - start);
  runtime::EngineMetrics m = engine.metrics();
  std::fprintf(
      stderr,
      "kiln: %zu prompts, concurrency %d: %.2f s; %lld prompt and "
      "%lld generated tokens (%.1f generated tokens/s); %lld steps, "
      "%lld preemptions\n",
      prompts.size(), concurrency, wall, static_cast<long long>(m.promptTokens),
      static_cast<long long>(m.generatedTokens),
      wall > 0 ? double(m.generatedTokens) / wall : 0.0,
      static_cast<long long>(m.steps), static_cast<long long>(m.preemptions));
  printPercentiles("time to first token", m.timeToFirstToken);
  printPercentiles("inter-token latency", m.interTokenLatency);
  return failures ? 1 : 0;
}

} // namespace kiln
