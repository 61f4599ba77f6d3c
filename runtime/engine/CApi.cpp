//===- CApi.cpp - Kiln's inference engine, from C -------------------------===//
//
// Part of Kiln. See kiln.h. Every entry point runs its body inside guarded(),
// which turns each C++ exception into a kiln_status and a thread-local
// message: nothing may unwind into C frames, which have no unwind tables
// and no idea what a std::exception is.
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/kiln.h"

#include "runtime/Artifact.h"
#include "runtime/CompiledModel.h"
#include "runtime/CpuFeatures.h"
#include "runtime/engine/CompiledModelExecutor.h"
#include "runtime/engine/Engine.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using namespace kiln::runtime;

struct kiln_engine {
  std::unique_ptr<Engine> engine;
};

struct kiln_request {
  std::shared_ptr<RequestStream> stream;
  RequestId id = 0;
  /// The event kiln_request_next returned last: it owns the text and error
  /// the kiln_event points into, until the next call.
  TokenEvent current;
  /// Its top log-probabilities in kiln.h's layout. Reserved at submit for
  /// the count the sampling asked for, so filling it never allocates: an
  /// allocation failure after the event left the stream would lose it.
  std::vector<kiln_top_logprob> top;
  /// The last event was returned (only the thread calling next/release
  /// touches it).
  bool ended = false;
};

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

thread_local std::string errorText;
thread_local const char *errorMessage = "";

/// Records `message` as the thread's last error. Must not throw: it runs in
/// the catch handlers, where a second exception would escape.
void record(const char *function, const std::string &message) noexcept {
  try {
    errorText = std::string(function) + ": " + message;
    errorMessage = errorText.c_str();
  } catch (...) {
    errorMessage = "out of memory (while recording an error)";
  }
}

kiln_status fail(kiln_status status, const char *function,
                 const std::string &message) noexcept {
  record(function, message);
  return status;
}

kiln_status succeed() noexcept {
  errorMessage = "";
  return KILN_OK;
}

/// Thrown by the entry points' own argument checks, caught by guarded().
struct ApiError {
  kiln_status status;
  std::string message;
};

[[noreturn]] void invalid(const std::string &message) {
  throw ApiError{KILN_ERROR_INVALID_ARGUMENT, message};
}

/// Runs `body` (which returns a kiln_status), mapping what it throws.
template <typename Body>
kiln_status guarded(const char *function, Body &&body) noexcept {
  try {
    return body();
  } catch (const ApiError &e) {
    return fail(e.status, function, e.message);
  } catch (const std::bad_alloc &) {
    return fail(KILN_ERROR_OUT_OF_MEMORY, function, "out of memory");
  } catch (const EngineBusyError &e) {
    return fail(KILN_ERROR_BUSY, function, e.what());
  } catch (const std::invalid_argument &e) {
    return fail(KILN_ERROR_INVALID_ARGUMENT, function, e.what());
  } catch (const std::out_of_range &e) { // a token id outside the vocabulary
    return fail(KILN_ERROR_INVALID_ARGUMENT, function, e.what());
  } catch (const EngineStoppedError &e) {
    return fail(KILN_ERROR_SHUT_DOWN, function, e.what());
  } catch (const std::exception &e) {
    return fail(KILN_ERROR_INTERNAL, function, e.what());
  } catch (...) {
    return fail(KILN_ERROR_INTERNAL, function, "an unknown C++ exception");
  }
}

//===----------------------------------------------------------------------===//
// Versioned structs (kiln.h, "Structs")
//===----------------------------------------------------------------------===//

/// Reads a caller's struct into `out` (which holds the defaults): the
/// fields both sides know; refuses bytes set past ours, which are fields of
/// a newer kiln.h this library cannot honour.
template <typename T> void readStruct(const T *in, T &out, const char *name) {
  static_assert(std::is_trivially_copyable<T>::value, "copied bytewise");
  const size_t size = in->struct_size;
  if (size < sizeof(size_t))
    invalid(std::string(name) + ".struct_size is " + std::to_string(size) +
            "; set it to sizeof(" + name + ") (the *_init macros do)");
  std::memcpy(&out, in, std::min(size, sizeof(T)));
  const auto *bytes = reinterpret_cast<const unsigned char *>(in);
  for (size_t i = sizeof(T); i < size; ++i)
    if (bytes[i] != 0)
      invalid(std::string(name) + " is " + std::to_string(size) +
              " bytes and sets fields past the " + std::to_string(sizeof(T)) +
              " this library knows (a newer kiln.h?)");
  out.struct_size = sizeof(T);
}

/// Writes `value` into a caller's struct: the fields both sides know, then
/// struct_size says how many bytes that was.
template <typename T> void writeStruct(const T &value, T *out) {
  static_assert(std::is_trivially_copyable<T>::value, "copied bytewise");
  const size_t size = std::min(out->struct_size, sizeof(T));
  std::memcpy(out, &value, size);
  out->struct_size = size;
}

template <typename T> void checkOutStruct(const T *out, const char *name) {
  if (out->struct_size < sizeof(size_t))
    invalid(std::string(name) + ".struct_size is " +
            std::to_string(out->struct_size) + "; set it to sizeof(" + name +
            ")");
}

template <typename T> void initStruct(T *out, size_t size, const T &defaults) {
  if (!out || size < sizeof(size_t))
    return;
  const size_t known = std::min(size, sizeof(T));
  std::memcpy(out, &defaults, known);
  // Fields of a newer kiln.h than ours: zero, which readStruct accepts.
  if (size > known)
    std::memset(reinterpret_cast<unsigned char *>(out) + known, 0,
                size - known);
  out->struct_size = size;
}

kiln_engine_options defaultEngineOptions() {
  kiln_engine_options o;
  std::memset(&o, 0, sizeof o); // padding too: the struct is copied bytewise
  o.struct_size = sizeof o;
  o.max_sequences = 8;
  o.prefix_caching = true;
  o.verify_hashes = true;
  return o;
}

kiln_sampling defaultSampling() {
  kiln_sampling s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  SamplingParams p; // one source of truth for the defaults
  s.temperature = p.temperature;
  s.top_k = p.topK;
  s.top_p = p.topP;
  s.min_p = p.minP;
  s.repetition_penalty = p.repetitionPenalty;
  s.repetition_window = p.repetitionWindow;
  s.presence_penalty = p.presencePenalty;
  s.frequency_penalty = p.frequencyPenalty;
  s.max_tokens = p.maxTokens;
  s.logprobs = p.logprobs;
  s.top_logprobs = p.topLogprobs;
  return s;
}

//===----------------------------------------------------------------------===//
// Opening
//===----------------------------------------------------------------------===//

/// Why CompiledModel::load threw an ArtifactError, as a status. It throws
/// one type for every problem; the file's absence and a CPU that no step
/// library fits are told apart after the fact, the message staying load's.
kiln_status classifyArtifactError(const char *path) noexcept {
  struct stat info;
  if (::stat(path, &info) != 0 && (errno == ENOENT || errno == ENOTDIR))
    return KILN_ERROR_NOT_FOUND;
  try {
    // Without hashes: only the small manifest is read.
    Artifact file = Artifact::open(path, /*verifyHashes=*/false);
    if (!file.hasSection(section::kManifest))
      return KILN_ERROR_BAD_ARTIFACT;
    ArtifactManifest manifest =
        parseManifest(path, file.section(section::kManifest));
    std::vector<std::vector<std::string>> required;
    for (const StepLibraryManifest &library : manifest.libraries)
      required.push_back(library.cpuFeatures);
    if (!chooseStepLibrary(required, hostCpuFeatures()).index)
      return KILN_ERROR_UNSUPPORTED;
  } catch (...) {
  }
  return KILN_ERROR_BAD_ARTIFACT;
}

void checkOptions(const kiln_engine_options &o) {
  auto require = [](bool ok, const char *field, int64_t value,
                    const char *expected) {
    if (!ok)
      invalid(std::string("options: ") + field + " is " +
              std::to_string(value) + ", expected " + expected);
  };
  require(o.threads >= 0, "threads", o.threads, "a value >= 0 (0: all cores)");
  require(o.max_sequences > 0, "max_sequences", o.max_sequences, "a value > 0");
  require(o.kv_memory_bytes >= 0, "kv_memory_bytes", o.kv_memory_bytes,
          "a value >= 0 (0: room for every sequence's whole context)");
  require(o.context_length >= 0 &&
              o.context_length <= std::numeric_limits<int32_t>::max(),
          "context_length", o.context_length,
          "a value in [0, 2^31) (0: the artifact's)");
  require(o.step_tokens >= 0, "step_tokens", o.step_tokens,
          "a value >= 0 (0: the artifact's)");
  require(o.max_queued >= 0, "max_queued", o.max_queued,
          "a value >= 0 (0: no bound)");
}

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

/// The kiln_sampling settings (NULL: defaults) in `request`. Ranges are
/// the engine's to check (SamplingParams' validate(), which names the
/// field); here only what C adds: NULL arrays with a count, duplicates the
/// C++ map would silently merge.
void applySampling(const kiln_sampling *in, GenerationRequest &request) {
  kiln_sampling s = defaultSampling();
  if (in)
    readStruct(in, s, "kiln_sampling");
  SamplingParams &p = request.sampling;
  p.temperature = s.temperature;
  p.topK = s.top_k;
  p.topP = s.top_p;
  p.minP = s.min_p;
  p.repetitionPenalty = s.repetition_penalty;
  p.repetitionWindow = s.repetition_window;
  p.presencePenalty = s.presence_penalty;
  p.frequencyPenalty = s.frequency_penalty;
  if (s.has_seed)
    p.seed = s.seed;
  p.maxTokens = s.max_tokens;
  p.logprobs = s.logprobs;
  p.topLogprobs = s.top_logprobs;
  request.ignoreEos = s.ignore_eos;

  auto requireArray = [](const void *array, size_t count, const char *name) {
    if (count > 0 && !array)
      invalid(std::string("sampling: ") + name + " is NULL with a count of " +
              std::to_string(count));
  };
  requireArray(s.stop_strings, s.stop_string_count, "stop_strings");
  for (size_t i = 0; i < s.stop_string_count; ++i) {
    if (!s.stop_strings[i])
      invalid("sampling: stop string " + std::to_string(i) + " is NULL");
    p.stopStrings.emplace_back(s.stop_strings[i]);
  }
  requireArray(s.stop_token_ids, s.stop_token_id_count, "stop_token_ids");
  p.stopTokenIds.assign(s.stop_token_ids,
                        s.stop_token_ids + s.stop_token_id_count);
  requireArray(s.logit_bias_tokens, s.logit_bias_count, "logit_bias_tokens");
  requireArray(s.logit_bias_values, s.logit_bias_count, "logit_bias_values");
  for (size_t i = 0; i < s.logit_bias_count; ++i)
    if (!p.logitBias.emplace(s.logit_bias_tokens[i], s.logit_bias_values[i])
             .second)
      invalid("sampling: logit_bias names token " +
              std::to_string(s.logit_bias_tokens[i]) + " twice");
}

kiln_finish_reason finishOf(FinishReason reason) {
  switch (reason) {
  case FinishReason::None:
    return KILN_FINISH_NONE;
  case FinishReason::StopToken:
    return KILN_FINISH_STOP_TOKEN;
  case FinishReason::StopString:
    return KILN_FINISH_STOP_STRING;
  case FinishReason::Length:
    return KILN_FINISH_LENGTH;
  case FinishReason::Cancelled:
    return KILN_FINISH_CANCELLED;
  case FinishReason::Error:
    return KILN_FINISH_ERROR;
  }
  return KILN_FINISH_ERROR;
}

/// The C view of `event`; it points into `event` and `top`, which must
/// outlive it. `top` must have room for the event's top log-probabilities
/// (reserved at submit) for this not to allocate.
kiln_event toEvent(const TokenEvent &event,
                   std::vector<kiln_top_logprob> &top) {
  top.clear();
  for (const TokenLogprob &t : event.topLogprobs)
    top.push_back({t.token, t.logprob});
  kiln_event out;
  std::memset(&out, 0, sizeof out);
  out.struct_size = sizeof out;
  out.request_id = event.request;
  out.token = event.token;
  out.text = event.text.c_str();
  out.text_length = event.text.size();
  out.has_logprob = event.logprob.has_value();
  out.logprob = event.logprob.value_or(0.0f);
  out.top_logprobs = top.empty() ? nullptr : top.data();
  out.top_logprobs_count = top.size();
  out.finish = finishOf(event.finish);
  out.error =
      event.finish == FinishReason::Error ? event.error.c_str() : nullptr;
  out.prompt_tokens = event.promptTokens;
  out.generated_tokens = event.generatedTokens;
  return out;
}

/// The engine whose callback the current thread is running, so that
/// kiln_engine_close can refuse to join its own thread.
thread_local const kiln_engine *callbackEngine = nullptr;

struct CallbackTarget {
  kiln_event_fn fn;
  void *user;
  const kiln_engine *engine;
  std::vector<kiln_top_logprob> top;
};

/// Submits `request` with the sampling and either a stream (`out`) or a
/// callback (`fn`).
kiln_status submit(kiln_engine *engine, GenerationRequest request,
                   const kiln_sampling *sampling, kiln_request **out,
                   kiln_event_fn fn, void *user, uint64_t *idOut) {
  applySampling(sampling, request);
  const size_t topCount = size_t(std::max(request.sampling.topLogprobs, 0));
  if (fn) {
    auto target = std::make_shared<CallbackTarget>();
    target->fn = fn;
    target->user = user;
    target->engine = engine;
    target->top.reserve(topCount);
    request.onToken = [target](const TokenEvent &event) {
      kiln_event view = toEvent(event, target->top);
      const kiln_engine *outer = callbackEngine;
      callbackEngine = target->engine;
      target->fn(&view, target->user);
      callbackEngine = outer;
    };
    RequestId id = engine->engine->submit(std::move(request), nullptr);
    if (idOut)
      *idOut = id;
    return succeed();
  }
  // Allocated first: once the engine has the request, nothing may fail.
  auto handle = std::make_unique<kiln_request>();
  handle->top.reserve(topCount);
  RequestId id = engine->engine->submit(std::move(request), &handle->stream);
  handle->id = id;
  *out = handle.release();
  return succeed();
}

void checkEngine(const kiln_engine *engine) {
  if (!engine)
    invalid("the engine is NULL");
}

void checkText(const char *text, const char *name) {
  if (!text)
    invalid(std::string(name) + " is NULL");
}

std::vector<int32_t> promptIds(const int32_t *ids, size_t count) {
  // The engine encodes the (empty) text prompt when given no ids, which
  // would quietly turn an empty id list into a BOS-only prompt.
  if (count == 0)
    invalid("the prompt has no tokens (count is 0)");
  if (!ids)
    invalid("ids is NULL with a count of " + std::to_string(count));
  return std::vector<int32_t>(ids, ids + count);
}

kiln_latency toLatency(const LatencyStats &stats) {
  kiln_latency l;
  l.count = stats.count;
  l.mean = stats.mean();
  l.p50 = stats.p50;
  l.p90 = stats.p90;
  l.p99 = stats.p99;
  return l;
}

} // namespace

//===----------------------------------------------------------------------===//
// The C entry points
//===----------------------------------------------------------------------===//

extern "C" {

const char *kiln_status_name(kiln_status status) {
  switch (status) {
  case KILN_OK:
    return "ok";
  case KILN_END_OF_STREAM:
    return "end_of_stream";
  case KILN_TIMED_OUT:
    return "timed_out";
  case KILN_ERROR_INVALID_ARGUMENT:
    return "invalid_argument";
  case KILN_ERROR_NOT_FOUND:
    return "not_found";
  case KILN_ERROR_BAD_ARTIFACT:
    return "bad_artifact";
  case KILN_ERROR_UNSUPPORTED:
    return "unsupported";
  case KILN_ERROR_BUSY:
    return "busy";
  case KILN_ERROR_SHUT_DOWN:
    return "shut_down";
  case KILN_ERROR_OUT_OF_MEMORY:
    return "out_of_memory";
  case KILN_ERROR_BUFFER_TOO_SMALL:
    return "buffer_too_small";
  case KILN_ERROR_INTERNAL:
    return "internal";
  }
  return "unknown";
}

const char *kiln_last_error(void) { return errorMessage; }

void kiln_engine_options_init_sized(kiln_engine_options *options,
                                    size_t struct_size) {
  initStruct(options, struct_size, defaultEngineOptions());
}

void kiln_sampling_init_sized(kiln_sampling *sampling, size_t struct_size) {
  initStruct(sampling, struct_size, defaultSampling());
}

kiln_status kiln_engine_open(const char *artifact_path,
                             const kiln_engine_options *options,
                             kiln_engine **out) {
  return guarded("kiln_engine_open", [&] {
    if (!out)
      invalid("out is NULL");
    *out = nullptr;
    checkText(artifact_path, "artifact_path");
    kiln_engine_options o = defaultEngineOptions();
    if (options)
      readStruct(options, o, "kiln_engine_options");
    checkOptions(o);

    CompiledModelOptions model;
    model.threads = o.threads;
    model.maxSequences = o.max_sequences;
    model.contextLength = o.context_length;
    model.kvMemoryBytes = o.kv_memory_bytes;
    model.verifyHashes = o.verify_hashes;
    EngineOptions engineOptions;
    engineOptions.scheduler.stepTokens = o.step_tokens;
    engineOptions.scheduler.prefixCaching = o.prefix_caching;
    engineOptions.maxQueued = o.max_queued;

    auto handle = std::make_unique<kiln_engine>();
    try {
      handle->engine = openArtifactEngine(artifact_path, model, engineOptions);
    } catch (const ArtifactError &e) {
      throw ApiError{classifyArtifactError(artifact_path), e.what()};
    } catch (const std::invalid_argument &e) {
      // The artifact's own tokenizer is read here too: its errors
      // ("tokenizer: ...", "tokenizer JSON: ...", or the engine finding its
      // vocabulary is not the model's) are the artifact's fault; the rest
      // (KV cache, scheduler) are the options'.
      bool tokenizer = std::strstr(e.what(), "tokenizer") != nullptr;
      throw ApiError{tokenizer ? KILN_ERROR_BAD_ARTIFACT
                               : KILN_ERROR_INVALID_ARGUMENT,
                     std::string(artifact_path) + ": " + e.what()};
    }
    *out = handle.release();
    return succeed();
  });
}

kiln_status kiln_engine_close(kiln_engine *engine) {
  return guarded("kiln_engine_close", [&] {
    if (!engine)
      return succeed();
    // Engine::shutdown would join the thread it runs on.
    if (callbackEngine == engine)
      invalid("called from one of this engine's callbacks; the engine "
              "stays open");
    // Cancels what is left (streams and callbacks get their last events),
    // joins the engine's thread. Streams outlive it: their handles hold
    // them, with the events not yet read.
    engine->engine->shutdown();
    delete engine;
    return succeed();
  });
}

kiln_status kiln_engine_info_get(kiln_engine *engine, kiln_engine_info *out) {
  return guarded("kiln_engine_info_get", [&] {
    checkEngine(engine);
    if (!out)
      invalid("out is NULL");
    checkOutStruct(out, "kiln_engine_info");
    kiln_engine_info info;
    std::memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    StepLimits limits = engine->engine->limits();
    const TokenizerSpec &spec = engine->engine->tokenizer().spec();
    info.vocab_size = limits.vocabSize;
    info.context_length = limits.contextLength;
    info.max_sequences = limits.maxSequences;
    info.bos_id = spec.bosId;
    info.eos_id = spec.eosId;
    writeStruct(info, out);
    return succeed();
  });
}

kiln_status kiln_submit(kiln_engine *engine, const char *prompt,
                        const kiln_sampling *sampling, kiln_request **out) {
  return guarded("kiln_submit", [&] {
    if (out)
      *out = nullptr;
    checkEngine(engine);
    checkText(prompt, "prompt");
    if (!out)
      invalid("out is NULL");
    GenerationRequest request;
    request.prompt = prompt;
    return submit(engine, std::move(request), sampling, out, nullptr, nullptr,
                  nullptr);
  });
}

kiln_status kiln_submit_tokens(kiln_engine *engine, const int32_t *ids,
                               size_t count, const kiln_sampling *sampling,
                               kiln_request **out) {
  return guarded("kiln_submit_tokens", [&] {
    if (out)
      *out = nullptr;
    checkEngine(engine);
    if (!out)
      invalid("out is NULL");
    GenerationRequest request;
    request.promptIds = promptIds(ids, count);
    return submit(engine, std::move(request), sampling, out, nullptr, nullptr,
                  nullptr);
  });
}

kiln_status kiln_submit_callback(kiln_engine *engine, const char *prompt,
                                 const kiln_sampling *sampling,
                                 kiln_event_fn fn, void *user,
                                 uint64_t *id_out) {
  return guarded("kiln_submit_callback", [&] {
    checkEngine(engine);
    checkText(prompt, "prompt");
    if (!fn)
      invalid("fn is NULL");
    GenerationRequest request;
    request.prompt = prompt;
    return submit(engine, std::move(request), sampling, nullptr, fn, user,
                  id_out);
  });
}

kiln_status kiln_submit_tokens_callback(kiln_engine *engine, const int32_t *ids,
                                        size_t count,
                                        const kiln_sampling *sampling,
                                        kiln_event_fn fn, void *user,
                                        uint64_t *id_out) {
  return guarded("kiln_submit_tokens_callback", [&] {
    checkEngine(engine);
    if (!fn)
      invalid("fn is NULL");
    GenerationRequest request;
    request.promptIds = promptIds(ids, count);
    return submit(engine, std::move(request), sampling, nullptr, fn, user,
                  id_out);
  });
}

kiln_status kiln_request_next(kiln_request *request, kiln_event *out,
                              int32_t timeout_ms) {
  return guarded("kiln_request_next", [&] {
    if (!request)
      invalid("the request is NULL");
    if (!out)
      invalid("out is NULL");
    checkOutStruct(out, "kiln_event");
    if (timeout_ms < -1)
      invalid("timeout_ms is " + std::to_string(timeout_ms) +
              ", expected -1 (wait), 0 (look) or a positive time");
    TokenEvent event;
    bool got = timeout_ms < 0
                   ? request->stream->next(event)
                   : request->stream->next(
                         event, std::chrono::milliseconds(timeout_ms));
    if (!got) {
      if (timeout_ms >= 0 && request->stream->timedOut())
        return fail(KILN_TIMED_OUT, "kiln_request_next",
                    "no event within " + std::to_string(timeout_ms) + " ms");
      return fail(KILN_END_OF_STREAM, "kiln_request_next",
                  "request " + std::to_string(request->id) +
                      " has ended: its last event was returned before");
    }
    // From here on nothing allocates (moves, and `top` has its room), so
    // the event taken from the stream always reaches the caller.
    request->current = std::move(event);
    request->ended = request->current.last();
    writeStruct(toEvent(request->current, request->top), out);
    return succeed();
  });
}

uint64_t kiln_request_id(const kiln_request *request) {
  errorMessage = "";
  return request ? request->id : 0;
}

kiln_status kiln_request_cancel(kiln_request *request) {
  return guarded("kiln_request_cancel", [&] {
    if (!request)
      invalid("the request is NULL");
    // A no-op once the request has ended, so also after kiln_engine_close
    // (which ends every stream) although the engine is gone.
    request->stream->cancel();
    return succeed();
  });
}

kiln_status kiln_cancel(kiln_engine *engine, uint64_t request_id) {
  return guarded("kiln_cancel", [&] {
    checkEngine(engine);
    if (!engine->engine->cancel(request_id))
      return fail(KILN_ERROR_NOT_FOUND, "kiln_cancel",
                  "no request " + std::to_string(request_id) +
                      " is waiting or running (unknown, or it has ended)");
    return succeed();
  });
}

void kiln_request_release(kiln_request *request) {
  guarded("kiln_request_release", [&] {
    if (!request)
      return succeed();
    std::unique_ptr<kiln_request> owned(request);
    // Nobody will read it: stop spending steps on it. The stream's own
    // check makes this a no-op when the last event is queued already.
    if (!owned->ended)
      owned->stream->cancel();
    return succeed();
  });
}

kiln_status kiln_engine_metrics(kiln_engine *engine, kiln_metrics *out) {
  return guarded("kiln_engine_metrics", [&] {
    checkEngine(engine);
    if (!out)
      invalid("out is NULL");
    checkOutStruct(out, "kiln_metrics");
    EngineMetrics m = engine->engine->metrics();
    kiln_metrics c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.queued = m.queued;
    c.running = m.running;
    c.kv_used_blocks = m.kv.usedBlocks;
    c.kv_free_blocks = m.kv.freeBlocks;
    c.kv_total_blocks = m.kv.totalBlocks;
    c.kv_cached_blocks = m.kv.cachedBlocks;
    c.kv_block_positions = m.kv.blockPositions;
    c.kv_peak_used_blocks = m.kvPeakUsedBlocks;
    c.preemptions = m.preemptions;
    c.steps = m.steps;
    c.submitted = m.submitted;
    c.finished = m.finished;
    c.cancelled = m.cancelled;
    c.failed = m.failed;
    c.prompt_tokens = m.promptTokens;
    c.generated_tokens = m.generatedTokens;
    c.tokens_per_second = m.tokensPerSecond;
    c.time_to_first_token = toLatency(m.timeToFirstToken);
    c.inter_token_latency = toLatency(m.interTokenLatency);
    c.uptime_seconds = m.uptimeSeconds;
    writeStruct(c, out);
    return succeed();
  });
}

kiln_status kiln_tokenize(kiln_engine *engine, const char *text, bool add_bos,
                          int32_t *ids, size_t capacity, size_t *count_out) {
  return guarded("kiln_tokenize", [&] {
    checkEngine(engine);
    checkText(text, "text");
    if (!count_out)
      invalid("count_out is NULL");
    if (capacity > 0 && !ids)
      invalid("ids is NULL with a capacity of " + std::to_string(capacity));
    std::vector<int32_t> tokens =
        engine->engine->tokenizer().encode(text, add_bos);
    *count_out = tokens.size();
    std::copy_n(tokens.begin(), std::min(capacity, tokens.size()), ids);
    if (tokens.size() > capacity)
      return fail(KILN_ERROR_BUFFER_TOO_SMALL, "kiln_tokenize",
                  "the text is " + std::to_string(tokens.size()) +
                      " tokens and ids holds " + std::to_string(capacity));
    return succeed();
  });
}

kiln_status kiln_detokenize(kiln_engine *engine, const int32_t *ids,
                            size_t count, char *text, size_t capacity,
                            size_t *length_out) {
  return guarded("kiln_detokenize", [&] {
    checkEngine(engine);
    if (!length_out)
      invalid("length_out is NULL");
    if (count > 0 && !ids)
      invalid("ids is NULL with a count of " + std::to_string(count));
    if (capacity > 0 && !text)
      invalid("text is NULL with a capacity of " + std::to_string(capacity));
    std::string decoded = engine->engine->tokenizer().decode(
        std::vector<int32_t>(ids, ids + count));
    *length_out = decoded.size();
    if (decoded.size() + 1 > capacity) {
      if (capacity > 0)
        text[0] = '\0';
      return fail(KILN_ERROR_BUFFER_TOO_SMALL, "kiln_detokenize",
                  "the text is " + std::to_string(decoded.size()) +
                      " bytes and a NUL; text holds " +
                      std::to_string(capacity));
    }
    std::memcpy(text, decoded.c_str(), decoded.size() + 1);
    return succeed();
  });
}

} // extern "C"
