/*===- kiln.h - Kiln's inference engine, from C -------------------*- C -*-===//
 *
 * Part of Kiln. A C99 interface to the continuous-batching engine
 * (runtime/engine/Engine.h): open a compiled artifact, submit generation
 * requests from any thread, read their tokens from a pull stream or a
 * callback, cancel them, read metrics. docs/c-api.md has an example.
 *
 * Errors. Every function that can fail returns a kiln_status. Negative
 * values are errors; KILN_OK (0) and the two non-error outcomes of
 * kiln_request_next (KILN_END_OF_STREAM, KILN_TIMED_OUT) are not.
 * kiln_last_error() returns a message naming what went wrong in the
 * calling thread's latest call ("kiln_submit: sampling: top_p is 1.5,
 * expected a value in (0, 1]"), or what happened (KILN_END_OF_STREAM,
 * KILN_TIMED_OUT); "" after a call that returned KILN_OK. No C++ exception
 * ever leaves these functions.
 *
 * Structs. Every struct passed across this interface starts with
 * `size_t struct_size`: sizeof(struct) as the program was compiled. The
 * kiln_*_init() macros set it for options; set it yourself on the structs
 * the library fills (kiln_event, kiln_metrics, kiln_engine_info) before
 * passing them in. The library reads only the
 * fields both sides know (fields a smaller struct lacks keep their
 * defaults) and refuses, with KILN_ERROR_INVALID_ARGUMENT, a struct that
 * sets fields it does not know (non-zero bytes past its own struct); it
 * writes only the fields both sides know and then sets struct_size to the
 * bytes it wrote. So a program built against an older kiln.h keeps working
 * with a newer library, and a newer one learns what an older library left
 * out.
 *
 * Threads.
 *  - Engine calls (kiln_submit*, kiln_cancel, kiln_engine_metrics,
 *    kiln_engine_info_get, kiln_tokenize, kiln_detokenize) are safe from any
 *    thread, concurrently, while the engine is open.
 *  - A kiln_request is used by one thread at a time for kiln_request_next
 *    and kiln_request_release (it may move between threads);
 *    kiln_request_id and kiln_request_cancel may be called from any thread
 *    at the same time, until kiln_request_release begins.
 *  - Callbacks (kiln_submit_callback) run on the engine's own thread, one
 *    at a time, in the order of the request's tokens; the step waits for
 *    them, so they must return quickly and never block on something another
 *    request's progress depends on. They may call kiln_submit*, kiln_cancel
 *    and kiln_engine_metrics; they must not call kiln_engine_close, and must
 *    not throw or longjmp out. A callback may run before kiln_submit_callback
 *    has returned the request's id (the event carries it).
 *  - kiln_engine_close must not run while another thread still uses the
 *    engine or any of its kiln_request handles, nor from a callback (there
 *    it refuses, with KILN_ERROR_INVALID_ARGUMENT). It cancels the
 *    requests left: each one's stream or callback gets its last event
 *    (KILN_FINISH_CANCELLED) before kiln_engine_close returns.
 *  - kiln_request handles may be released before or after kiln_engine_close;
 *    after it they stay valid (their streams hold the events not yet read,
 *    the last one included) and must still be released.
 *  - kiln_last_error is per thread.
 *
 *===----------------------------------------------------------------------===*/

#ifndef KILN_RUNTIME_ENGINE_KILN_H
#define KILN_RUNTIME_ENGINE_KILN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open engine: one model, its KV cache and its scheduling thread. */
typedef struct kiln_engine kiln_engine;
/* The pulling end of one request (kiln_submit, kiln_submit_tokens). */
typedef struct kiln_request kiln_request;

typedef enum kiln_status {
  KILN_OK = 0,
  /* kiln_request_next: the request's last event was already returned. */
  KILN_END_OF_STREAM = 1,
  /* kiln_request_next: no event came within the timeout. */
  KILN_TIMED_OUT = 2,

  /* A NULL handle or pointer, an option or sampling setting out of range
   * (the message names it), an empty prompt or one longer than the
   * context. */
  KILN_ERROR_INVALID_ARGUMENT = -1,
  /* The artifact file does not exist; kiln_cancel: no such request, or it
   * has already ended. */
  KILN_ERROR_NOT_FOUND = -2,
  /* The file is not a usable Kiln artifact (bad magic, version, corrupt
   * section, malformed manifest or tokenizer...). */
  KILN_ERROR_BAD_ARTIFACT = -3,
  /* The artifact was compiled for CPU features this machine lacks. */
  KILN_ERROR_UNSUPPORTED = -4,
  /* The wait queue is full (kiln_engine_options.max_queued); retry later. */
  KILN_ERROR_BUSY = -5,
  /* The engine is closing and takes no new requests (a callback that
   * submits while kiln_engine_close cancels what is left). */
  KILN_ERROR_SHUT_DOWN = -6,
  KILN_ERROR_OUT_OF_MEMORY = -7,
  /* kiln_tokenize, kiln_detokenize: the output buffer is too small (the
   * size needed is returned anyway). */
  KILN_ERROR_BUFFER_TOO_SMALL = -8,
  /* Anything else; the message says what. */
  KILN_ERROR_INTERNAL = -9
} kiln_status;

/* "ok", "end_of_stream", "invalid_argument", ...; "unknown" for values
 * this library does not define. Static storage. */
const char *kiln_status_name(kiln_status status);

/* The message of the calling thread's latest call: what went wrong, or ""
 * after KILN_OK. Valid until the thread's next call of a kiln_ function
 * (kiln_status_name and kiln_last_error excepted). Never NULL. */
const char *kiln_last_error(void);

/*===------------------------------------------------------------------===*
 * Engine
 *===------------------------------------------------------------------===*/

typedef struct kiln_engine_options {
  size_t struct_size;
  /* Threads running each step; 0 (default): one per core this process may
   * use. */
  int32_t threads;
  /* Requests running at once (KV cache sequence slots); default 8. More
   * wait in a queue. */
  int32_t max_sequences;
  /* Bytes of the KV cache's block pool; 0 (default): enough for every
   * running request to reach the context length. */
  int64_t kv_memory_bytes;
  /* Positions a request may reach (prompt and generated tokens); 0
   * (default): the artifact's context length. */
  int64_t context_length;
  /* Tokens one step holds at most; 0 (default): the artifact's step size
   * (kiln compile --max-tokens). */
  int32_t step_tokens;
  /* Requests waiting beyond this many make kiln_submit* return
   * KILN_ERROR_BUSY; 0 (default): no bound. */
  int32_t max_queued;
  /* Reuse the KV cache of equal prompt prefixes across requests (default
   * true). */
  bool prefix_caching;
  /* Check every section's SHA-256 when opening (default true). */
  bool verify_hashes;
} kiln_engine_options;

/* kiln_engine_options_init(&options) fills `options` with the defaults and
 * sets struct_size to sizeof(kiln_engine_options) as this program sees it
 * (a macro, so that the size is the program's and not the library's). */
void kiln_engine_options_init_sized(kiln_engine_options *options,
                                    size_t struct_size);
#define kiln_engine_options_init(options)                                      \
  kiln_engine_options_init_sized((options), sizeof(kiln_engine_options))

/* Opens the artifact `kiln compile` wrote at `artifact_path` and starts the
 * engine's thread. `options` may be NULL (defaults). On success *out is the
 * engine; on failure *out is NULL and the status says why
 * (KILN_ERROR_NOT_FOUND, KILN_ERROR_BAD_ARTIFACT, KILN_ERROR_UNSUPPORTED,
 * KILN_ERROR_INVALID_ARGUMENT for options, KILN_ERROR_OUT_OF_MEMORY). */
kiln_status kiln_engine_open(const char *artifact_path,
                             const kiln_engine_options *options,
                             kiln_engine **out);

/* Refuses new requests, cancels those left (each gets its last event),
 * stops the engine's thread and frees the engine. NULL is a no-op (KILN_OK).
 * See "Threads" above for when it may be called; from one of the engine's
 * callbacks it does nothing but return KILN_ERROR_INVALID_ARGUMENT. */
kiln_status kiln_engine_close(kiln_engine *engine);

typedef struct kiln_engine_info {
  size_t struct_size;
  int32_t vocab_size;
  /* Positions a request may reach: a prompt may have at most this many
   * tokens. */
  int64_t context_length;
  int32_t max_sequences;
  /* Tokens one step holds at most. */
  int32_t step_tokens;
  /* -1 when the vocabulary has none. */
  int32_t bos_id, eos_id;
} kiln_engine_info;

/* Set out->struct_size first. */
kiln_status kiln_engine_info_get(kiln_engine *engine, kiln_engine_info *out);

/*===------------------------------------------------------------------===*
 * Requests
 *===------------------------------------------------------------------===*/

/* A request's sampling settings; docs/sampling.md says what each does and
 * in which order they apply. Errors name them by these names. Arrays are
 * read during the kiln_submit* call only. */
typedef struct kiln_sampling {
  size_t struct_size;
  float temperature;        /* >= 0; 0 is greedy; default 1 */
  int32_t top_k;            /* >= 0; 0 (default): all tokens */
  float top_p;              /* (0, 1]; default 1 */
  float min_p;              /* [0, 1]; default 0 */
  float repetition_penalty; /* > 0; default 1 (off) */
  /* Latest prompt and generated tokens repetition_penalty looks at: -1
   * (default) all, 0 none. */
  int32_t repetition_window;
  float presence_penalty;  /* default 0 */
  float frequency_penalty; /* default 0 */
  /* The random stream's seed when has_seed; otherwise a random one. */
  bool has_seed;
  uint64_t seed;
  /* Tokens to generate at most; 0 (default): until the context is full. */
  int32_t max_tokens;
  /* Generation ends at any of these strings (non-empty UTF-8, NUL-
   * terminated); the stop string and what follows it is not shown. */
  const char *const *stop_strings;
  size_t stop_string_count;
  /* Generation ends when one of these tokens is sampled (its text is not
   * shown). */
  const int32_t *stop_token_ids;
  size_t stop_token_id_count;
  /* logit_bias_values[i] is added to the logit of logit_bias_tokens[i];
   * -INFINITY bans the token. */
  const int32_t *logit_bias_tokens;
  const float *logit_bias_values;
  size_t logit_bias_count;
  /* Report each token's log-probability (kiln_event.logprob). */
  bool logprobs;
  /* Report this many most likely tokens with theirs (0: none). */
  int32_t top_logprobs;
  /* Keep going past the model's own end tokens (BOS, EOS, EOT). */
  bool ignore_eos;
} kiln_sampling;

/* kiln_sampling_init(&sampling): the defaults, as for the options. */
void kiln_sampling_init_sized(kiln_sampling *sampling, size_t struct_size);
#define kiln_sampling_init(sampling)                                           \
  kiln_sampling_init_sized((sampling), sizeof(kiln_sampling))

typedef enum kiln_finish_reason {
  KILN_FINISH_NONE = 0,    /* still generating */
  KILN_FINISH_STOP_TOKEN,  /* a stop token or the model's end token */
  KILN_FINISH_STOP_STRING, /* the text reached a stop string */
  KILN_FINISH_LENGTH,      /* max_tokens, or the context is full */
  KILN_FINISH_CANCELLED,   /* kiln_cancel, kiln_request_cancel, close */
  KILN_FINISH_ERROR        /* it could not go on: kiln_event.error */
} kiln_finish_reason;

typedef struct kiln_top_logprob {
  int32_t token;
  float logprob;
} kiln_top_logprob;

/* One piece of a request's output. Every request gets exactly one event
 * with finish != KILN_FINISH_NONE, its last. Pointers in it belong to the
 * library: from kiln_request_next they stay valid until the next
 * kiln_request_next or kiln_request_release on that request; in a callback,
 * until the callback returns. */
typedef struct kiln_event {
  size_t struct_size;
  uint64_t request_id;
  /* The sampled token; -1 in an event that only ends the request. */
  int32_t token;
  /* Text to show now: whole UTF-8 characters (maybe none: text that may
   * turn out to be a stop string is held back). NUL-terminated; text_length
   * is its length in bytes (the text itself may hold NUL bytes). Never
   * NULL. */
  const char *text;
  size_t text_length;
  /* The token's log-probability, with kiln_sampling.logprobs. */
  bool has_logprob;
  float logprob;
  /* With kiln_sampling.top_logprobs: the most likely tokens, most likely
   * first. NULL when top_logprobs_count is 0. */
  const kiln_top_logprob *top_logprobs;
  size_t top_logprobs_count;
  kiln_finish_reason finish;
  /* With KILN_FINISH_ERROR: what went wrong. NULL otherwise. */
  const char *error;
  /* In the last event: the prompt's tokens and the tokens generated. */
  int32_t prompt_tokens;
  int32_t generated_tokens;
} kiln_event;

/* Queues a request for `prompt` (UTF-8, encoded with the artifact's
 * tokenizer, BOS first when the vocabulary has one). `sampling` may be NULL
 * (defaults). On success *out is a stream to read with kiln_request_next
 * and to release with kiln_request_release. Fails with
 * KILN_ERROR_INVALID_ARGUMENT (settings, an empty prompt, one longer than
 * the context or than the whole KV cache), KILN_ERROR_BUSY,
 * KILN_ERROR_SHUT_DOWN. A sequence that outgrows the whole KV cache while
 * it generates ends with KILN_FINISH_ERROR. */
kiln_status kiln_submit(kiln_engine *engine, const char *prompt,
                        const kiln_sampling *sampling, kiln_request **out);

/* The same with the prompt as token ids (no BOS added). */
kiln_status kiln_submit_tokens(kiln_engine *engine, const int32_t *ids,
                               size_t count, const kiln_sampling *sampling,
                               kiln_request **out);

/* Receives a request's events on the engine's thread (see "Threads"). */
typedef void (*kiln_event_fn)(const kiln_event *event, void *user);

/* The callback style: events go to fn(event, user) instead of a stream.
 * *id_out (may be NULL) receives the request's id, for kiln_cancel. After
 * the event with finish != KILN_FINISH_NONE, fn is never called for this
 * request again. */
kiln_status kiln_submit_callback(kiln_engine *engine, const char *prompt,
                                 const kiln_sampling *sampling,
                                 kiln_event_fn fn, void *user,
                                 uint64_t *id_out);
kiln_status kiln_submit_tokens_callback(kiln_engine *engine, const int32_t *ids,
                                        size_t count,
                                        const kiln_sampling *sampling,
                                        kiln_event_fn fn, void *user,
                                        uint64_t *id_out);

/* Takes the request's next event into *out (set out->struct_size first).
 * timeout_ms: -1 waits as long as it takes, 0 only looks, > 0 waits at
 * most that long. Returns KILN_OK with an event; KILN_END_OF_STREAM once
 * the last event (finish != KILN_FINISH_NONE) has been returned;
 * KILN_TIMED_OUT when nothing came in time. *out is written only with
 * KILN_OK. */
kiln_status kiln_request_next(kiln_request *request, kiln_event *out,
                              int32_t timeout_ms);

/* The request's id (as in its events and for kiln_cancel); 0 for NULL. */
uint64_t kiln_request_id(const kiln_request *request);

/* Asks the engine to stop the request: its last event then says
 * KILN_FINISH_CANCELLED, unless it ended first. KILN_OK either way. */
kiln_status kiln_request_cancel(kiln_request *request);

/* The same by id, for either style: KILN_ERROR_NOT_FOUND when no such
 * request is running or waiting (it may just have ended). */
kiln_status kiln_cancel(kiln_engine *engine, uint64_t request_id);

/* Frees the handle; a request that has not ended is cancelled first (its
 * remaining events are dropped). NULL is a no-op. */
void kiln_request_release(kiln_request *request);

/*===------------------------------------------------------------------===*
 * Metrics
 *===------------------------------------------------------------------===*/

/* Latencies in seconds: count and mean over the engine's life,
 * percentiles over the latest 4096 samples (0 without any). */
typedef struct kiln_latency {
  int64_t count;
  double mean, p50, p90, p99;
} kiln_latency;

/* A snapshot of the engine. Counters and KV cache figures count a request
 * before its last event is delivered, so a reader who has taken every last
 * event finds finished + cancelled + failed == submitted and the KV blocks
 * of ended requests free. Latency and throughput figures are refreshed
 * once per engine step, after the step's events: they may lag by a step.
 * Each generated token adds one latency sample (the first to
 * time_to_first_token, the others to inter_token_latency), so once they
 * are current their counts add up to generated_tokens. */
typedef struct kiln_metrics {
  size_t struct_size;
  int32_t queued;  /* submitted and not yet running */
  int32_t running; /* holding a KV cache slot */
  /* KV cache blocks of kv_block_positions positions: used + free ==
   * total. Used blocks include those only the prefix cache keeps (kept for
   * reuse, reclaimed when room is needed); kv_cached_blocks counts the
   * prefix cache's blocks, some of which running requests may share. With
   * no request running, kv_used_blocks == kv_cached_blocks. */
  int32_t kv_used_blocks, kv_free_blocks, kv_total_blocks;
  int32_t kv_cached_blocks;
  int32_t kv_block_positions;
  /* The most blocks used at once so far (after a step's room was
   * reserved). */
  int32_t kv_peak_used_blocks;
  int64_t preemptions; /* running requests sent back to wait for room */
  int64_t steps;
  /* Requests accepted by kiln_submit*, and those that ended: finished
   * (stop token or string, length), cancelled, failed (error). */
  int64_t submitted, finished, cancelled, failed;
  /* Prompt tokens of ended requests; tokens generated. */
  int64_t prompt_tokens, generated_tokens;
  /* Generated tokens per second over the last few seconds. */
  double tokens_per_second;
  kiln_latency time_to_first_token; /* submit to first token */
  kiln_latency inter_token_latency; /* between a request's tokens */
  double uptime_seconds;
} kiln_metrics;

/* Set out->struct_size first. */
kiln_status kiln_engine_metrics(kiln_engine *engine, kiln_metrics *out);

/*===------------------------------------------------------------------===*
 * Tokenizer
 *===------------------------------------------------------------------===*/

/* The artifact's tokenizer: `text` to token ids, BOS first when add_bos
 * (and the vocabulary has one). *count_out receives the number of ids;
 * ids[0..capacity) receive them. KILN_ERROR_BUFFER_TOO_SMALL when capacity
 * is short (ids may be NULL with capacity 0 to ask for the count). */
kiln_status kiln_tokenize(kiln_engine *engine, const char *text, bool add_bos,
                          int32_t *ids, size_t capacity, size_t *count_out);

/* The text of `ids` (a leading BOS is skipped), NUL-terminated in
 * text[0..capacity). *length_out receives its length without the NUL;
 * KILN_ERROR_BUFFER_TOO_SMALL when capacity < length + 1 (text may be NULL
 * with capacity 0 to ask for the length). */
kiln_status kiln_detokenize(kiln_engine *engine, const int32_t *ids,
                            size_t count, char *text, size_t capacity,
                            size_t *length_out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_ENGINE_KILN_H */
