//===- Engine.cpp - Many requests, one model, continuous batching ---------===//
//
// Part of Kiln. See Engine.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/Engine.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::runtime {

using Clock = std::chrono::steady_clock;

namespace {
double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
} // namespace

//===----------------------------------------------------------------------===//
// RequestStream
//===----------------------------------------------------------------------===//

void RequestStream::push(TokenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    ended = ended || event.last();
    events.push_back(std::move(event));
  }
  ready.notify_all();
}

bool RequestStream::next(TokenEvent &event) {
  std::unique_lock<std::mutex> lock(mutex);
  lastTimedOut = false;
  ready.wait(lock, [&] { return !events.empty() || lastTaken; });
  if (events.empty())
    return false;
  event = std::move(events.front());
  events.pop_front();
  lastTaken = lastTaken || event.last();
  return true;
}

bool RequestStream::next(TokenEvent &event, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  lastTimedOut = !ready.wait_for(lock, timeout,
                                 [&] { return !events.empty() || lastTaken; });
  if (lastTimedOut || events.empty())
    return false;
  event = std::move(events.front());
  events.pop_front();
  lastTaken = lastTaken || event.last();
  return true;
}

bool RequestStream::timedOut() const {
  std::lock_guard<std::mutex> lock(mutex);
  return lastTimedOut;
}

void RequestStream::cancel() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (ended)
      return;
  }
  engine->cancel(requestId);
}

std::string RequestStream::readAll(TokenEvent *last) {
  std::string text;
  TokenEvent event;
  while (next(event)) {
    text += event.text;
    if (event.last() && last)
      *last = event;
  }
  return text;
}

//===----------------------------------------------------------------------===//
// Engine
//===----------------------------------------------------------------------===//

struct Engine::Request {
  RequestId id = 0;
  TokenCallback onToken;
  std::shared_ptr<RequestStream> stream;
  std::vector<int32_t> promptIds;
  std::unique_ptr<RequestSampler> sampler;
  std::unique_ptr<TextStream> text;
  Clock::time_point submitted, lastToken;
  int32_t generated = 0;
};

Engine::Engine(std::unique_ptr<StepExecutor> executorIn, Tokenizer tokenizer,
               std::vector<int32_t> modelStopTokens, EngineOptions optionsIn)
    : executor(std::move(executorIn)), vocab(std::move(tokenizer)),
      modelStops(std::move(modelStopTokens)), options(optionsIn) {
  stepLimits = executor->limits();
  if (vocab.vocabSize() != stepLimits.vocabSize)
    throw std::invalid_argument("engine: the tokenizer has " +
                                std::to_string(vocab.vocabSize()) +
                                " tokens and the model's vocabulary " +
                                std::to_string(stepLimits.vocabSize));
  scheduler = std::make_unique<Scheduler>(*executor, options.scheduler);
  snapshot.kv = executor->usage();
  kvCapacity = int64_t(snapshot.kv.totalBlocks) * snapshot.kv.blockPositions;
  thread = std::thread([this] { loop(); });
}

Engine::~Engine() { shutdown(); }

std::shared_ptr<RequestStream> Engine::submit(GenerationRequest request) {
  std::shared_ptr<RequestStream> stream;
  submit(std::move(request), &stream);
  return stream;
}

RequestId Engine::submit(GenerationRequest spec,
                         std::shared_ptr<RequestStream> *streamOut) {
  auto request = std::make_unique<Request>();
  request->promptIds = !spec.promptIds.empty()
                           ? std::move(spec.promptIds)
                           : vocab.encode(spec.prompt, spec.addBos);
  const std::vector<int32_t> &ids = request->promptIds;
  if (ids.empty())
    throw std::invalid_argument("the prompt is empty: it encodes to no tokens "
                                "(and the vocabulary has no BOS to start "
                                "from)");
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= stepLimits.vocabSize)
      throw std::invalid_argument(
          "prompt token " + std::to_string(i) + " is " +
          std::to_string(ids[i]) + ", outside the vocabulary of " +
          std::to_string(stepLimits.vocabSize) + " tokens");
  if (int64_t(ids.size()) > stepLimits.contextLength)
    throw std::invalid_argument("the prompt is " + std::to_string(ids.size()) +
                                " tokens, longer than the context of " +
                                std::to_string(stepLimits.contextLength) +
                                " positions");
  if (kvCapacity > 0 && int64_t(ids.size()) > kvCapacity)
    throw std::invalid_argument("the prompt is " + std::to_string(ids.size()) +
                                " tokens and the KV cache holds " +
                                std::to_string(kvCapacity) +
                                " positions in all (--kv-memory raises it)");
  SamplingParams textParams = spec.sampling;
  if (!spec.ignoreEos)
    for (int32_t stop : modelStops)
      if (std::find(textParams.stopTokenIds.begin(),
                    textParams.stopTokenIds.end(),
                    stop) == textParams.stopTokenIds.end())
        textParams.stopTokenIds.push_back(stop);
  // Both validate the settings (std::invalid_argument naming the field).
  request->sampler = std::make_unique<RequestSampler>(
      spec.sampling, stepLimits.vocabSize, request->promptIds);
  request->text = std::make_unique<TextStream>(vocab, textParams,
                                               request->promptIds.back());
  request->onToken = std::move(spec.onToken);
  request->submitted = Clock::now();

  std::lock_guard<std::mutex> lock(mutex);
  if (stopping)
    throw EngineStoppedError("engine: it is shutting down and takes no new "
                             "requests");
  // Requests not yet running, less those the free slots will take in.
  int32_t waitingForSlot =
      queuedCount - std::max(0, scheduler->slotCount() - snapshot.running);
  if (options.maxQueued > 0 && waitingForSlot >= options.maxQueued)
    throw EngineBusyError("engine: " + std::to_string(waitingForSlot) +
                          " requests are already waiting for a slot (the "
                          "limit)");
  request->id = nextId++;
  if (!request->onToken)
    request->stream =
        std::shared_ptr<RequestStream>(new RequestStream(this, request->id));
  if (streamOut)
    *streamOut = request->stream;
  RequestId id = request->id;
  live.push_back(id);
  ++queuedCount;
  ++snapshot.submitted;
  snapshot.queued = queuedCount;
  inbox.push_back(std::move(request));
  wake.notify_one();
  return id;
}

bool Engine::cancel(RequestId id) {
  std::lock_guard<std::mutex> lock(mutex);
  if (std::find(live.begin(), live.end(), id) == live.end())
    return false;
  cancels.push_back(id);
  wake.notify_one();
  return true;
}

void Engine::waitIdle() {
  std::unique_lock<std::mutex> lock(mutex);
  idle.wait(lock, [&] { return live.empty() && finishing == 0; });
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_one();
  if (thread.joinable())
    thread.join();
}

EngineMetrics Engine::metrics() const {
  std::lock_guard<std::mutex> lock(mutex);
  return snapshot;
}

void Engine::loop() {
  for (;;) {
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] {
        return stopping || !inbox.empty() || !cancels.empty() ||
               !scheduler->empty();
      });
      stop = stopping;
      if (stop) // whatever is left is cancelled below
        for (RequestId id : live)
          cancels.push_back(id);
    }
    try {
      admitNew();
      applyCancels();
      if (!stop && !scheduler->empty())
        runStep();
    } catch (const std::exception &e) {
      failAll(e.what());
    }
    publishMetrics();
    if (stop)
      return;
  }
}

void Engine::failAll(const std::string &why) {
  // Something outside a step failed (out of memory, a broken invariant):
  // the state of the running requests is unknown, so they end with the
  // reason, and the engine goes on with new ones.
  std::vector<RequestId> ids;
  for (auto &[id, request] : active)
    ids.push_back(id);
  for (RequestId id : ids) {
    auto it = active.find(id);
    if (it == active.end())
      continue;
    TokenEvent event;
    event.finish = FinishReason::Error;
    event.error = "the engine failed: " + why;
    try {
      finishRequest(*it->second, std::move(event));
    } catch (const std::exception &) {
      active.erase(id); // its reader is told nothing more; the engine lives
      std::lock_guard<std::mutex> lock(mutex);
      auto l = std::find(live.begin(), live.end(), id);
      if (l != live.end())
        live.erase(l);
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (live.empty() && finishing == 0)
    idle.notify_all();
}

void Engine::admitNew() {
  std::deque<std::unique_ptr<Request>> arrived;
  {
    std::lock_guard<std::mutex> lock(mutex);
    arrived.swap(inbox);
  }
  for (std::unique_ptr<Request> &request : arrived) {
    Request &r = *request;
    active.emplace(r.id, std::move(request));
    try {
      scheduler->add(r.id, r.promptIds);
    } catch (const std::invalid_argument &e) {
      TokenEvent event;
      event.finish = FinishReason::Error;
      event.error = e.what();
      finishRequest(r, std::move(event));
    }
  }
}

void Engine::applyCancels() {
  std::vector<RequestId> ids;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ids.swap(cancels);
  }
  for (RequestId id : ids) {
    auto it = active.find(id);
    if (it == active.end())
      continue; // finished meanwhile
    Request &r = *it->second;
    TokenEvent event;
    event.text = r.text->finish(FinishReason::Cancelled).text;
    event.finish = FinishReason::Cancelled;
    finishRequest(r, std::move(event));
  }
}

void Engine::runStep() {
  ScheduledStep step = scheduler->schedule();
  for (auto &[id, why] : step.failed) {
    auto it = active.find(id);
    if (it == active.end())
      continue;
    TokenEvent event;
    event.finish = FinishReason::Error;
    event.error = why;
    finishRequest(*it->second, std::move(event));
  }
  {
    // Who runs and who waits, as of this plan, before its tokens arrive.
    std::lock_guard<std::mutex> lock(mutex);
    updateCounts();
  }
  if (step.empty())
    return;

  std::vector<float> logits;
  try {
    logits = executor->step(step.batch);
  } catch (const std::exception &e) {
    // The step's requests cannot go on; the others are unharmed.
    for (const StepSlice &slice : step.slices) {
      auto it = active.find(slice.id);
      if (it == active.end())
        continue;
      TokenEvent event;
      event.finish = FinishReason::Error;
      event.error = std::string("the step failed: ") + e.what();
      finishRequest(*it->second, std::move(event));
    }
    return;
  }
  scheduler->commit(step);
  Clock::time_point now = Clock::now();
  const size_t vocabSize = size_t(stepLimits.vocabSize);
  for (size_t row = 0; row < step.rowRequests.size(); ++row) {
    auto it = active.find(step.rowRequests[row]);
    if (it != active.end())
      sampleRow(*it->second, logits.data() + row * vocabSize, now);
  }
  recorder.throughput.record(now, int64_t(step.rowRequests.size()));
}

void Engine::sampleRow(Request &r, const float *logits, Clock::time_point now) {
  TokenEvent event;
  try {
    SampledToken sampled = r.sampler->sample(logits, stepLimits.vocabSize);
    TextDelta delta = r.text->push(sampled.token);
    event.token = sampled.token;
    event.text = std::move(delta.text);
    event.logprob = sampled.logprob;
    event.topLogprobs = std::move(sampled.topLogprobs);
    event.finish = delta.finish;
  } catch (const std::exception &e) {
    event.finish = FinishReason::Error;
    event.error = e.what();
    finishRequest(r, std::move(event));
    return;
  }
  ++r.generated;
  ++recorder.generatedTokens;
  if (r.generated == 1)
    recorder.timeToFirstToken.record(seconds(now - r.submitted));
  else
    recorder.interTokenLatency.record(seconds(now - r.lastToken));
  r.lastToken = now;
  // The context is full when the sequence's positions are used up: a token
  // sampled at the last position is shown but cannot be fed.
  if (!event.last() &&
      int64_t(r.promptIds.size()) + r.generated > stepLimits.contextLength) {
    event.text += r.text->finish(FinishReason::Length).text;
    event.finish = FinishReason::Length;
  }
  if (event.last()) {
    finishRequest(r, std::move(event));
    return;
  }
  scheduler->append(r.id, event.token);
  deliver(r, std::move(event));
}

void Engine::finishRequest(Request &r, TokenEvent event) {
  RequestId id = r.id;
  scheduler->remove(id);
  event.promptTokens = int32_t(r.promptIds.size());
  event.generatedTokens = r.generated;
  recorder.promptTokens += int64_t(r.promptIds.size());
  switch (event.finish) {
  case FinishReason::Cancelled:
    ++recorder.cancelled;
    break;
  case FinishReason::Error:
    ++recorder.failed;
    break;
  default:
    ++recorder.finished;
  }
  {
    // Bookkeeping first, so whoever takes the last event already sees the
    // request gone (cancel() false, the metrics counting it) ...
    std::lock_guard<std::mutex> lock(mutex);
    live.erase(std::find(live.begin(), live.end(), id));
    ++finishing;
    updateCounts();
  }
  deliver(r, std::move(event));
  active.erase(id);
  {
    // ... and idle only once the last event is delivered (a callback has
    // returned).
    std::lock_guard<std::mutex> lock(mutex);
    --finishing;
    if (live.empty() && finishing == 0)
      idle.notify_all();
  }
}

void Engine::deliver(Request &r, TokenEvent event) {
  event.request = r.id;
  event.time = Clock::now();
  if (r.onToken) {
    try {
      r.onToken(event);
    } catch (...) {
      // Callbacks must not throw; one that does loses its request, not the
      // engine.
      if (!event.last()) {
        std::lock_guard<std::mutex> lock(mutex);
        cancels.push_back(r.id);
      }
    }
  } else
    r.stream->push(std::move(event));
}

void Engine::publishMetrics() {
  std::lock_guard<std::mutex> lock(mutex);
  updateSnapshot();
}

void Engine::updateSnapshot() {
  updateCounts();
  // Percentiles sort their windows: at most every 50 ms while busy, and
  // whenever the engine goes idle.
  Clock::time_point now = Clock::now();
  if (scheduler->empty() ||
      now - percentilesTime > std::chrono::milliseconds(50)) {
    recorder.timeToFirstToken.fill(snapshot.timeToFirstToken, true);
    recorder.interTokenLatency.fill(snapshot.interTokenLatency, true);
    percentilesTime = now;
  }
}

void Engine::updateCounts() {
  queuedCount = int32_t(inbox.size()) + scheduler->waiting();
  snapshot.queued = queuedCount;
  snapshot.running = scheduler->running();
  snapshot.peakRunning = std::max(snapshot.peakRunning, snapshot.running);
  snapshot.kv = executor->usage();
  snapshot.kvPeakUsedBlocks =
      std::max(snapshot.kvPeakUsedBlocks, snapshot.kv.usedBlocks);
  snapshot.preemptions = scheduler->preemptions();
  snapshot.steps = scheduler->steps();
  snapshot.finished = recorder.finished;
  snapshot.cancelled = recorder.cancelled;
  snapshot.failed = recorder.failed;
  snapshot.promptTokens = recorder.promptTokens;
  snapshot.generatedTokens = recorder.generatedTokens;
  recorder.timeToFirstToken.fill(snapshot.timeToFirstToken, false);
  recorder.interTokenLatency.fill(snapshot.interTokenLatency, false);
  Clock::time_point now = Clock::now();
  snapshot.tokensPerSecond = recorder.throughput.tokensPerSecond(now);
  snapshot.uptimeSeconds = seconds(now - started);
}

} // namespace kiln::runtime
