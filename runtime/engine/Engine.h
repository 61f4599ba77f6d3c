//===- Engine.h - Many requests, one model, continuous batching -*- C++ -*-===//
//
// Part of Kiln. The engine turns independent generation requests into
// batched steps of one model: a thread of its own runs the Scheduler's plan,
// samples each request's next token with the request's own sampler
// (runtime/sampling) and streams text to the request. Programs submit
// requests from any thread and receive tokens either by callback or by
// pulling from a RequestStream; they can cancel, and read a metrics
// snapshot at any time. `kiln run` is built on it; the C API
// (runtime/engine/kiln.h) wraps it.
//
// Threads:
//  - submit(), cancel(), metrics() and RequestStream's calls are safe from
//    any thread, concurrently;
//  - callbacks run on the engine's thread, one at a time, in the order of
//    the request's tokens. They must return quickly (the step waits), must
//    not throw, and may call submit(), cancel() and metrics(); they must
//    not destroy the engine;
//  - the destructor cancels what is left, waits for the engine's thread
//    and must not run on it. Every stream has had its last event by then,
//    so RequestStream::cancel() stays safe on a stream that outlives its
//    engine (it does nothing).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ENGINE_ENGINE_H
#define KILN_RUNTIME_ENGINE_ENGINE_H

#include "runtime/Tokenizer.h"
#include "runtime/engine/EngineMetrics.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/engine/StepExecutor.h"
#include "runtime/sampling/RequestSampler.h"
#include "runtime/sampling/TextStream.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace kiln::runtime {

/// One request's output as it arrives: a token and the text it completes,
/// or the end of the request.
struct TokenEvent {
  RequestId request = 0;
  /// The sampled token; -1 in an event that only ends the request.
  int32_t token = -1;
  /// Text to show now: whole UTF-8 characters, never part of a stop string
  /// (often empty while text is held back).
  std::string text;
  /// With SamplingParams::logprobs / topLogprobs.
  std::optional<float> logprob;
  std::vector<TokenLogprob> topLogprobs;
  /// Set on the request's last event; None before.
  FinishReason finish = FinishReason::None;
  /// With FinishReason::Error: what went wrong.
  std::string error;
  /// On the last event: the request's prompt and generated token counts.
  int32_t promptTokens = 0, generatedTokens = 0;
  /// When the engine made the event (a pulling reader may take it later).
  std::chrono::steady_clock::time_point time;

  bool last() const { return finish != FinishReason::None; }
};

using TokenCallback = std::function<void(const TokenEvent &)>;

struct GenerationRequest {
  /// The prompt: token ids when given, else `prompt` encoded (with BOS when
  /// addBos and the vocabulary has one).
  std::string prompt;
  std::vector<int32_t> promptIds;
  bool addBos = true;
  SamplingParams sampling;
  /// Without it, the model's own end tokens (BOS, as llama2.c stops at it,
  /// and EOS/EOT when the model stops at them) end generation too.
  bool ignoreEos = false;
  /// When set, events go to this callback instead of the request's stream.
  TokenCallback onToken;
};

/// The pulling end of a request. Thread-safe.
class RequestStream {
public:
  RequestId id() const { return requestId; }
  /// Waits for the next event; false once the last event was taken.
  bool next(TokenEvent &event);
  /// The same with a deadline: false also when `timeout` passes first
  /// (then `event` is untouched and timedOut() is true).
  bool next(TokenEvent &event, std::chrono::milliseconds timeout);
  bool timedOut() const;
  /// Asks the engine to stop this request (its last event then says
  /// Cancelled unless it ended first).
  void cancel();
  /// Every remaining event's text, until the end; the last event's finish
  /// reason and error in `last`.
  std::string readAll(TokenEvent *last = nullptr);

private:
  friend class Engine;
  RequestStream(class Engine *engine, RequestId id)
      : engine(engine), requestId(id) {}
  void push(TokenEvent event);

  class Engine *engine;
  RequestId requestId;
  mutable std::mutex mutex;
  std::condition_variable ready;
  std::deque<TokenEvent> events;
  bool ended = false, lastTaken = false, lastTimedOut = false;
};

struct EngineOptions {
  SchedulerOptions scheduler;
  /// Requests waiting for a slot (submitted, beyond the slots free) beyond
  /// this many make submit() throw EngineBusyError (0: no bound). A burst
  /// that free slots will take in is never refused.
  int32_t maxQueued = 0;
};

/// submit() after shutdown() began.
class EngineStoppedError : public std::logic_error {
public:
  using std::logic_error::logic_error;
};

/// submit() when the wait queue is full.
class EngineBusyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Engine {
public:
  /// Starts the engine's thread. The tokenizer's vocabulary must be the
  /// model's; `modelStopTokens` are the model's own end tokens.
  Engine(std::unique_ptr<StepExecutor> executor, Tokenizer tokenizer,
         std::vector<int32_t> modelStopTokens, EngineOptions options = {});
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Queues a request. Throws std::invalid_argument naming what is wrong
  /// (sampling settings, a prompt longer than the context or than the whole
  /// KV cache, an empty prompt), EngineBusyError when the wait queue is
  /// full, and EngineStoppedError after shutdown(). Other requests are
  /// unaffected. A sequence that outgrows the whole KV cache while it
  /// generates ends with FinishReason::Error.
  /// The stream is null when the request has a callback.
  std::shared_ptr<RequestStream> submit(GenerationRequest request);
  /// Same, returning the request's id (for cancel()).
  RequestId submit(GenerationRequest request,
                   std::shared_ptr<RequestStream> *stream);

  /// Stops a request: before the next step its sequence is removed and its
  /// KV cache blocks are free, and its last event says Cancelled. False
  /// when the id is unknown or already finished.
  bool cancel(RequestId id);

  /// Waits until no request is queued or running.
  void waitIdle();
  /// Refuses new requests, cancels those left, stops the thread.
  void shutdown();

  EngineMetrics metrics() const;
  const Tokenizer &tokenizer() const { return vocab; }
  StepLimits limits() const { return stepLimits; }

private:
  struct Request;
  void loop();
  void admitNew();
  void failAll(const std::string &why);
  void applyCancels();
  void runStep();
  void sampleRow(Request &request, const float *logits,
                 std::chrono::steady_clock::time_point now);
  void finishRequest(Request &request, TokenEvent event);
  void deliver(Request &request, TokenEvent event);
  void publishMetrics();
  /// Refresh `snapshot` (all of it, or only the cheap counts); the caller
  /// holds `mutex` on the engine's thread.
  void updateSnapshot();
  void updateCounts();

  std::unique_ptr<StepExecutor> executor;
  Tokenizer vocab;
  std::vector<int32_t> modelStops;
  EngineOptions options;
  StepLimits stepLimits;
  int64_t kvCapacity = 0; ///< positions the KV cache holds; 0: no bound

  // Owned by the engine's thread.
  std::unique_ptr<Scheduler> scheduler;
  std::map<RequestId, std::unique_ptr<Request>> active;
  struct Recorder {
    int64_t finished = 0, cancelled = 0, failed = 0;
    int64_t promptTokens = 0, generatedTokens = 0;
    LatencyRecorder timeToFirstToken, interTokenLatency;
    ThroughputRecorder throughput;
  } recorder;

  // Shared with other threads, under `mutex`.
  mutable std::mutex mutex;
  std::condition_variable wake, idle;
  std::deque<std::unique_ptr<Request>> inbox;
  std::vector<RequestId> cancels;
  std::vector<RequestId> live; ///< submitted and not finished
  RequestId nextId = 1;
  bool stopping = false;
  int32_t queuedCount = 0; ///< inbox + scheduler's waiting
  int32_t finishing = 0;   ///< last events being delivered
  std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point percentilesTime;
  EngineMetrics snapshot;

  std::thread thread;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ENGINE_ENGINE_H
