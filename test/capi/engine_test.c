/*===- engine_test.c - The C API, from C, under threads ------------------===//
 *
 * Part of Kiln. Exercises runtime/engine/kiln.h as a C program would, on a
 * real artifact (ctest makes a tiny synthetic one first):
 *
 *  1. bad input: NULL pointers, a missing file, a file that is no artifact,
 *     a corrupted artifact, a CPU without the artifact's features, options
 *     and sampling out of range (the message names the field), a prompt
 *     longer than the context or the KV cache, a full wait queue, timeouts,
 *     structs from a "newer kiln.h";
 *  2. greedy outputs of 8 requests submitted at once from several threads
 *     equal, byte for byte, each request run alone;
 *  3. a request cancelled mid-generation ends with KILN_FINISH_CANCELLED
 *     and its KV cache blocks are free again (exact counts, see
 *     test_cancel);
 *  4. the callback style delivers what the stream style does; closing the
 *     engine ends streams and callbacks, and a callback cannot submit or
 *     close then;
 *  5. submitter threads send random short requests while canceller threads
 *     cancel random ids: every request ends exactly once, and the metrics'
 *     counters add up.
 *
 * Usage: kiln-capi-test ARTIFACT [--threads N] [--submitters N]
 *                       [--cancellers N] [--iterations N]
 * --threads: the engine's step threads (default 1); --iterations: requests
 * per submitter in test 5. Any mismatch prints FAIL with what was expected
 * and exits 1.
 *
 * Timing never decides a result: where the engine's progress matters, a
 * callback request holds the engine's thread at each token (the pacer) so
 * that the state checked is certain.
 *
 *===----------------------------------------------------------------------===*/

#define _POSIX_C_SOURCE 200809L

#include "runtime/engine/kiln.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *artifact;
static int engine_threads = 1;
static int submitters = 4;
static int cancellers = 2;
static int iterations = 200;

/*===------------------------------------------------------------------===*
 * Checks
 *===------------------------------------------------------------------===*/

static void fail_at(int line, const char *format, ...) {
  /* Read before anything else can call into the library. */
  const char *last = kiln_last_error();
  va_list args;
  va_start(args, format);
  fprintf(stderr, "kiln-capi-test: FAIL (engine_test.c:%d): ", line);
  vfprintf(stderr, format, args);
  va_end(args);
  fprintf(stderr, "\n  kiln_last_error() on this thread: \"%s\"\n", last);
  exit(1);
}

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      fail_at(__LINE__, __VA_ARGS__);                                          \
  } while (0)

/* `call` must return `want`. */
#define EXPECT_STATUS(call, want)                                              \
  do {                                                                         \
    kiln_status got_ = (call);                                                 \
    if (got_ != (want))                                                        \
      fail_at(__LINE__, "%s returned %s, expected %s", #call,                  \
              kiln_status_name(got_), kiln_status_name(want));                 \
  } while (0)

#define EXPECT_OK(call) EXPECT_STATUS(call, KILN_OK)

/* `call` must fail with `want` and a message containing `words`. */
#define EXPECT_ERROR(call, want, words)                                        \
  do {                                                                         \
    kiln_status got_ = (call);                                                 \
    if (got_ != (want))                                                        \
      fail_at(__LINE__, "%s returned %s, expected %s", #call,                  \
              kiln_status_name(got_), kiln_status_name(want));                 \
    if (!strstr(kiln_last_error(), (words)))                                   \
      fail_at(__LINE__, "%s: the message does not mention \"%s\"", #call,      \
              (words));                                                        \
  } while (0)

static void say(const char *format, ...) {
  va_list args;
  va_start(args, format);
  printf("kiln-capi-test: ");
  vprintf(format, args);
  printf("\n");
  va_end(args);
  fflush(stdout);
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void sleep_ms(double ms) {
  struct timespec t;
  t.tv_sec = (time_t)(ms / 1000);
  t.tv_nsec = (long)((ms - (double)t.tv_sec * 1000) * 1e6);
  nanosleep(&t, NULL);
}

/* A small deterministic generator per thread. */
static uint32_t next_random(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*state >> 33);
}

static kiln_engine *open_engine(int32_t max_sequences, int32_t max_queued) {
  kiln_engine_options options;
  kiln_engine_options_init(&options);
  options.threads = engine_threads;
  options.max_sequences = max_sequences;
  options.max_queued = max_queued;
  kiln_engine *engine = NULL;
  EXPECT_OK(kiln_engine_open(artifact, &options, &engine));
  CHECK(engine != NULL, "kiln_engine_open returned KILN_OK and no engine");
  return engine;
}

static kiln_metrics metrics_of(kiln_engine *engine) {
  kiln_metrics m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  EXPECT_OK(kiln_engine_metrics(engine, &m));
  CHECK(m.struct_size == sizeof m, "kiln_metrics.struct_size came back as %zu",
        m.struct_size);
  CHECK(m.kv_used_blocks + m.kv_free_blocks == m.kv_total_blocks,
        "KV blocks: %d used + %d free != %d in all", m.kv_used_blocks,
        m.kv_free_blocks, m.kv_total_blocks);
  CHECK(m.finished + m.cancelled + m.failed <= m.submitted,
        "metrics: %lld finished + %lld cancelled + %lld failed > %lld "
        "submitted",
        (long long)m.finished, (long long)m.cancelled, (long long)m.failed,
        (long long)m.submitted);
  return m;
}

/* The metrics once every request submitted has ended. The counters are
 * current once the last events are taken; the latency figures follow at
 * the end of the engine's step (kiln.h), when each generated token has
 * added one sample. */
static kiln_metrics settled_metrics(kiln_engine *engine) {
  double deadline = now_seconds() + 20;
  for (;;) {
    kiln_metrics m = metrics_of(engine);
    if (m.finished + m.cancelled + m.failed == m.submitted && m.running == 0 &&
        m.queued == 0 &&
        m.time_to_first_token.count + m.inter_token_latency.count ==
            m.generated_tokens)
      return m;
    CHECK(now_seconds() < deadline,
          "metrics never settled: %lld submitted, %lld finished, %lld "
          "cancelled, %lld failed, %d running, %d queued; %lld tokens, "
          "%lld + %lld latency samples",
          (long long)m.submitted, (long long)m.finished, (long long)m.cancelled,
          (long long)m.failed, m.running, m.queued,
          (long long)m.generated_tokens, (long long)m.time_to_first_token.count,
          (long long)m.inter_token_latency.count);
    sleep_ms(1);
  }
}

/* No request holds KV cache blocks: the used ones are exactly those the
 * prefix cache keeps. */
static void expect_only_cached_blocks(const kiln_metrics *m, const char *when) {
  CHECK(m->kv_used_blocks == m->kv_cached_blocks,
        "%s: %d KV blocks used, but only %d are the prefix cache's: blocks "
        "of ended requests were not freed",
        when, m->kv_used_blocks, m->kv_cached_blocks);
}

/*===------------------------------------------------------------------===*
 * Reading a request's output
 *===------------------------------------------------------------------===*/

enum { kMaxTokens = 1024 };

typedef struct output {
  char text[16384];
  size_t length;
  int32_t tokens[kMaxTokens];
  float logprobs[kMaxTokens];
  int ntokens;
  int events;
  int finals;
  kiln_finish_reason finish;
  int32_t prompt_tokens, generated_tokens;
  uint64_t id;
  char error[512];
} output;

/* Whether text[0..n) is whole, well-formed UTF-8 characters. */
static int valid_utf8(const unsigned char *text, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = text[i];
    size_t length = c < 0x80         ? 1
                    : (c >> 5) == 6  ? 2
                    : (c >> 4) == 14 ? 3
                    : (c >> 3) == 30 ? 4
                                     : 0;
    if (length == 0 || i + length > n)
      return 0;
    for (size_t k = 1; k < length; ++k)
      if ((text[i + k] & 0xC0) != 0x80)
        return 0;
    i += length;
  }
  return 1;
}

/* Checks one event's invariants and adds it to `out`. */
static void take_event(output *out, const kiln_event *event) {
  CHECK(out->finals == 0, "request %llu: an event after its last one",
        (unsigned long long)event->request_id);
  CHECK(event->text != NULL, "an event with a NULL text");
  CHECK(event->text[event->text_length] == '\0',
        "an event's text is not NUL-terminated at text_length %zu",
        event->text_length);
  CHECK(valid_utf8((const unsigned char *)event->text, event->text_length),
        "request %llu: an event's text is not whole UTF-8 characters",
        (unsigned long long)event->request_id);
  CHECK(out->length + event->text_length < sizeof out->text,
        "more text than the test expects");
  memcpy(out->text + out->length, event->text, event->text_length);
  out->length += event->text_length;
  out->text[out->length] = '\0';
  if (out->events == 0)
    out->id = event->request_id;
  CHECK(event->request_id == out->id, "request %llu got an event for %llu",
        (unsigned long long)out->id, (unsigned long long)event->request_id);
  ++out->events;
  if (event->token >= 0) {
    CHECK(out->ntokens < kMaxTokens, "too many tokens");
    out->logprobs[out->ntokens] = event->has_logprob ? event->logprob : 1.0f;
    out->tokens[out->ntokens++] = event->token;
  }
  CHECK((event->top_logprobs == NULL) == (event->top_logprobs_count == 0),
        "top_logprobs is %p with a count of %zu", (void *)event->top_logprobs,
        event->top_logprobs_count);
  CHECK((event->error != NULL) == (event->finish == KILN_FINISH_ERROR),
        "an event with finish %d has error %s", (int)event->finish,
        event->error ? event->error : "NULL");
  if (event->finish != KILN_FINISH_NONE) {
    ++out->finals;
    out->finish = event->finish;
    out->prompt_tokens = event->prompt_tokens;
    out->generated_tokens = event->generated_tokens;
    if (event->error)
      snprintf(out->error, sizeof out->error, "%s", event->error);
  }
}

/* Reads the stream to its end, then checks it stays ended. */
static void read_all(kiln_request *request, output *out) {
  kiln_event event;
  memset(&event, 0, sizeof event);
  event.struct_size = sizeof event;
  while (out->finals == 0) {
    EXPECT_OK(kiln_request_next(request, &event, -1));
    take_event(out, &event);
  }
  CHECK(out->id == kiln_request_id(request),
        "events say request %llu, kiln_request_id %llu",
        (unsigned long long)out->id,
        (unsigned long long)kiln_request_id(request));
  EXPECT_STATUS(kiln_request_next(request, &event, -1), KILN_END_OF_STREAM);
  EXPECT_STATUS(kiln_request_next(request, &event, 0), KILN_END_OF_STREAM);
}

/* Reads `request` until `tokens` tokens came or it ended. */
static void read_tokens(kiln_request *request, output *out, int tokens) {
  kiln_event event;
  memset(&event, 0, sizeof event);
  event.struct_size = sizeof event;
  while (out->ntokens < tokens && out->finals == 0) {
    EXPECT_OK(kiln_request_next(request, &event, -1));
    take_event(out, &event);
  }
}

static void run_alone(kiln_engine *engine, const char *prompt,
                      const kiln_sampling *sampling, output *out) {
  kiln_request *request = NULL;
  EXPECT_OK(kiln_submit(engine, prompt, sampling, &request));
  memset(out, 0, sizeof *out);
  read_all(request, out);
  kiln_request_release(request);
}

static kiln_sampling greedy(int32_t max_tokens) {
  kiln_sampling s;
  kiln_sampling_init(&s);
  s.temperature = 0;
  s.max_tokens = max_tokens;
  /* A random model often samples its end tokens; go on past them so the
   * outputs compared are max_tokens long. */
  s.ignore_eos = true;
  return s;
}

/*===------------------------------------------------------------------===*
 * Holding the engine
 *===------------------------------------------------------------------===*/

/* A callback request that holds the engine's thread at each of its tokens
 * until the test lets it go on. Against the rules for real callbacks; here
 * it makes the engine's state certain while the test looks at it: no step
 * runs and nothing is published, every event of earlier steps has been
 * delivered, and each permit runs exactly one more step. */
typedef struct pacer {
  pthread_mutex_t lock;
  pthread_cond_t changed;
  int tokens;   /* tokens received */
  int waiting;  /* the engine's thread is held at token `tokens` */
  int permits;  /* tokens it may go past */
  int free_run; /* hold no more */
  int finals;
  kiln_finish_reason finish;
  /* When set, the last event's callback tries to submit and to close. */
  kiln_engine *engine;
  kiln_status submit_at_end, close_at_end;
} pacer;

static void pacer_init(pacer *p) {
  memset(p, 0, sizeof *p);
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->changed, NULL);
}

static void pacer_destroy(pacer *p) {
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->changed);
}

static void paced(const kiln_event *event, void *user) {
  pacer *p = user;
  pthread_mutex_lock(&p->lock);
  CHECK(p->finals == 0, "a paced request got an event after its last one");
  if (event->finish != KILN_FINISH_NONE) {
    ++p->finals;
    p->finish = event->finish;
    if (p->engine) {
      /* On the engine's thread while kiln_engine_close cancels what is
       * left: no new requests, and no closing from here. */
      kiln_request *late = NULL;
      p->submit_at_end = kiln_submit(p->engine, "late", NULL, &late);
      p->close_at_end = kiln_engine_close(p->engine);
    }
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return;
  }
  ++p->tokens;
  p->waiting = 1;
  pthread_cond_broadcast(&p->changed);
  while (!p->permits && !p->free_run)
    pthread_cond_wait(&p->changed, &p->lock);
  if (p->permits)
    --p->permits;
  p->waiting = 0;
  pthread_mutex_unlock(&p->lock);
}

/* Waits until the engine is held at the paced request's token `tokens`, or
 * the request has ended; returns the tokens it has. */
static int pacer_wait(pacer *p, int tokens) {
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 20;
  pthread_mutex_lock(&p->lock);
  while (!(p->waiting && p->tokens == tokens) && !p->finals)
    CHECK(pthread_cond_timedwait(&p->changed, &p->lock, &deadline) != ETIMEDOUT,
          "the paced request never reached token %d (it has %d)", tokens,
          p->tokens);
  int got = p->tokens;
  pthread_mutex_unlock(&p->lock);
  return got;
}

/* Lets the engine run one more step; returns the paced request's tokens. */
static int pacer_step(pacer *p) {
  pthread_mutex_lock(&p->lock);
  int next = p->tokens + 1;
  ++p->permits;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
  return pacer_wait(p, next);
}

static void pacer_release(pacer *p) {
  pthread_mutex_lock(&p->lock);
  p->free_run = 1;
  pthread_cond_broadcast(&p->changed);
  pthread_mutex_unlock(&p->lock);
}

static int pacer_ended(pacer *p) {
  pthread_mutex_lock(&p->lock);
  int ended = p->finals > 0;
  pthread_mutex_unlock(&p->lock);
  return ended;
}

static void pacer_wait_end(pacer *p) {
  pthread_mutex_lock(&p->lock);
  while (!p->finals)
    pthread_cond_wait(&p->changed, &p->lock);
  pthread_mutex_unlock(&p->lock);
}

/*===------------------------------------------------------------------===*
 * 1. Bad input
 *===------------------------------------------------------------------===*/

/* Before any engine (and its threads) exists: KILN_CPU_FEATURES=none makes
 * this machine lack every feature the artifact's code needs. */
static void test_unsupported_cpu(void) {
  setenv("KILN_CPU_FEATURES", "none", 1);
  kiln_engine *engine = NULL;
  kiln_status status = kiln_engine_open(artifact, NULL, &engine);
  unsetenv("KILN_CPU_FEATURES");
  if (status == KILN_OK) {
    /* A portable artifact needs no features at all. */
    say("the artifact needs no CPU features: KILN_ERROR_UNSUPPORTED not "
        "checked");
    EXPECT_OK(kiln_engine_close(engine));
    return;
  }
  CHECK(status == KILN_ERROR_UNSUPPORTED,
        "opening with KILN_CPU_FEATURES=none returned %s, expected "
        "unsupported",
        kiln_status_name(status));
  CHECK(strstr(kiln_last_error(), "lacks") != NULL,
        "the message does not say what the CPU lacks");
  CHECK(engine == NULL, "a failed open left an engine");
}

static void test_bad_open(void) {
  kiln_engine *engine = (kiln_engine *)&engine; /* must become NULL */
  EXPECT_ERROR(kiln_engine_open(NULL, NULL, &engine),
               KILN_ERROR_INVALID_ARGUMENT, "artifact_path");
  CHECK(engine == NULL, "a failed open left *out set");
  EXPECT_ERROR(kiln_engine_open(artifact, NULL, NULL),
               KILN_ERROR_INVALID_ARGUMENT, "out is NULL");

  const char *missing = "/nonexistent-kiln-dir/model.kiln";
  EXPECT_ERROR(kiln_engine_open(missing, NULL, &engine), KILN_ERROR_NOT_FOUND,
               missing);
  CHECK(engine == NULL, "a failed open left an engine");

  char junk[] = "/tmp/kiln-capi-test-XXXXXX";
  int fd = mkstemp(junk);
  CHECK(fd >= 0, "cannot create a temporary file");
  const char bytes[] = "this is not a Kiln artifact, only some text";
  CHECK(write(fd, bytes, sizeof bytes) == (ssize_t)sizeof bytes,
        "cannot write %s", junk);
  close(fd);
  kiln_status status = kiln_engine_open(junk, NULL, &engine);
  char message[1024];
  snprintf(message, sizeof message, "%s", kiln_last_error());
  unlink(junk);
  CHECK(status == KILN_ERROR_BAD_ARTIFACT,
        "opening a text file returned %s, expected bad_artifact",
        kiln_status_name(status));
  CHECK(strstr(message, junk) != NULL, "the message does not name the file");

  /* The artifact with bytes of its weights changed: the section hashes
   * catch it. */
  FILE *in = fopen(artifact, "rb");
  CHECK(in != NULL, "cannot read %s", artifact);
  fseek(in, 0, SEEK_END);
  long size = ftell(in);
  fseek(in, 0, SEEK_SET);
  unsigned char *copy = malloc((size_t)size);
  CHECK(copy && fread(copy, 1, (size_t)size, in) == (size_t)size,
        "cannot read %s", artifact);
  fclose(in);
  copy[size / 2] ^= 0x5a;
  copy[size / 3] ^= 0x5a;
  char corrupt[] = "/tmp/kiln-capi-test-XXXXXX";
  fd = mkstemp(corrupt);
  CHECK(fd >= 0 && write(fd, copy, (size_t)size) == (ssize_t)size,
        "cannot write %s", corrupt);
  close(fd);
  free(copy);
  status = kiln_engine_open(corrupt, NULL, &engine);
  snprintf(message, sizeof message, "%s", kiln_last_error());
  unlink(corrupt);
  CHECK(status == KILN_ERROR_BAD_ARTIFACT,
        "opening a corrupted artifact returned %s, expected bad_artifact",
        kiln_status_name(status));
  CHECK(strstr(message, "corrupt") != NULL,
        "the message does not say the artifact is corrupt: %s", message);

  kiln_engine_options options;
  kiln_engine_options_init(&options);
  CHECK(options.struct_size == sizeof options && options.max_sequences > 0 &&
            options.prefix_caching && options.verify_hashes,
        "kiln_engine_options_init did not fill the defaults");
  options.max_sequences = 0;
  EXPECT_ERROR(kiln_engine_open(artifact, &options, &engine),
               KILN_ERROR_INVALID_ARGUMENT, "max_sequences");
  kiln_engine_options_init(&options);
  options.kv_memory_bytes = 1000; /* less than one block */
  EXPECT_ERROR(kiln_engine_open(artifact, &options, &engine),
               KILN_ERROR_INVALID_ARGUMENT, "KV cache");
  kiln_engine_options_init(&options);
  options.struct_size = 0;
  EXPECT_ERROR(kiln_engine_open(artifact, &options, &engine),
               KILN_ERROR_INVALID_ARGUMENT, "struct_size");
  CHECK(engine == NULL, "a failed open left an engine");
}

static void test_bad_requests(kiln_engine *engine) {
  kiln_engine_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_OK(kiln_engine_info_get(engine, &info));
  CHECK(strcmp(kiln_last_error(), "") == 0,
        "kiln_last_error is \"%s\" after a success", kiln_last_error());
  CHECK(info.vocab_size > 0 && info.context_length > 0,
        "engine info: vocab %d, context %lld", info.vocab_size,
        (long long)info.context_length);

  kiln_request *request = (kiln_request *)&request; /* must become NULL */
  kiln_sampling sampling;
  kiln_sampling_init(&sampling);
  EXPECT_ERROR(kiln_submit(NULL, "hello", NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "engine is NULL");
  CHECK(request == NULL, "a failed submit left *out set");
  EXPECT_ERROR(kiln_submit(engine, NULL, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "prompt is NULL");
  EXPECT_ERROR(kiln_submit(engine, "hello", NULL, NULL),
               KILN_ERROR_INVALID_ARGUMENT, "out is NULL");
  EXPECT_ERROR(kiln_submit_callback(engine, "hello", NULL, NULL, NULL, NULL),
               KILN_ERROR_INVALID_ARGUMENT, "fn is NULL");

  sampling.top_p = 1.5f;
  EXPECT_ERROR(kiln_submit(engine, "hello", &sampling, &request),
               KILN_ERROR_INVALID_ARGUMENT, "top_p");
  CHECK(request == NULL, "a failed submit left *out set");
  kiln_sampling_init(&sampling);
  sampling.temperature = -1;
  EXPECT_ERROR(kiln_submit(engine, "hello", &sampling, &request),
               KILN_ERROR_INVALID_ARGUMENT, "temperature");
  kiln_sampling_init(&sampling);
  const char *stops[] = {"ok", NULL};
  sampling.stop_strings = stops;
  sampling.stop_string_count = 2;
  EXPECT_ERROR(kiln_submit(engine, "hello", &sampling, &request),
               KILN_ERROR_INVALID_ARGUMENT, "stop string 1 is NULL");
  kiln_sampling_init(&sampling);
  sampling.stop_string_count = 1;
  EXPECT_ERROR(kiln_submit(engine, "hello", &sampling, &request),
               KILN_ERROR_INVALID_ARGUMENT, "stop_strings");
  kiln_sampling_init(&sampling);
  int32_t bias_tokens[] = {5, 5};
  float bias_values[] = {1, 2};
  sampling.logit_bias_tokens = bias_tokens;
  sampling.logit_bias_values = bias_values;
  sampling.logit_bias_count = 2;
  EXPECT_ERROR(kiln_submit(engine, "hello", &sampling, &request),
               KILN_ERROR_INVALID_ARGUMENT, "twice");

  /* A sampling struct from a "newer kiln.h" that sets a field this library
   * does not know is refused; the same struct with the field zero is not. */
  union {
    kiln_sampling sampling;
    unsigned char bytes[sizeof(kiln_sampling) + 16];
  } newer;
  kiln_sampling_init_sized(&newer.sampling, sizeof newer.bytes);
  CHECK(newer.sampling.struct_size == sizeof newer.bytes,
        "kiln_sampling_init_sized did not keep the caller's size");
  newer.sampling.temperature = 0;
  newer.sampling.max_tokens = 1;
  newer.sampling.ignore_eos = true;
  newer.bytes[sizeof(kiln_sampling) + 3] = 1;
  EXPECT_ERROR(kiln_submit(engine, "hello", &newer.sampling, &request),
               KILN_ERROR_INVALID_ARGUMENT, "newer kiln.h");
  newer.bytes[sizeof(kiln_sampling) + 3] = 0;
  EXPECT_OK(kiln_submit(engine, "hello", &newer.sampling, &request));
  output out;
  memset(&out, 0, sizeof out);
  read_all(request, &out);
  kiln_request_release(request);
  CHECK(out.finish == KILN_FINISH_LENGTH && out.generated_tokens == 1,
        "max_tokens 1: finish %d after %d tokens", (int)out.finish,
        out.generated_tokens);

  /* Prompts: none, outside the vocabulary, longer than the context. */
  int32_t ids[4] = {1, 2, 3, 4};
  EXPECT_ERROR(kiln_submit_tokens(engine, ids, 0, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "no tokens");
  EXPECT_ERROR(kiln_submit_tokens(engine, NULL, 3, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "ids is NULL");
  ids[2] = info.vocab_size;
  EXPECT_ERROR(kiln_submit_tokens(engine, ids, 4, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "outside the vocabulary");
  size_t too_long = (size_t)info.context_length + 1;
  int32_t *long_ids = calloc(too_long, sizeof *long_ids);
  CHECK(long_ids != NULL, "out of memory");
  for (size_t i = 0; i < too_long; ++i)
    long_ids[i] = (int32_t)(3 + i % 100);
  EXPECT_ERROR(kiln_submit_tokens(engine, long_ids, too_long, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "longer than the context");
  /* Exactly the context is fine: one token is sampled after it (and
   * cannot be fed), then the context is full. */
  kiln_sampling whole = greedy(0);
  EXPECT_OK(
      kiln_submit_tokens(engine, long_ids, too_long - 1, &whole, &request));
  memset(&out, 0, sizeof out);
  read_all(request, &out);
  kiln_request_release(request);
  CHECK(out.finish == KILN_FINISH_LENGTH && out.generated_tokens == 1 &&
            out.prompt_tokens == info.context_length,
        "a prompt of the whole context: finish %d after %d tokens (prompt "
        "%d)",
        (int)out.finish, out.generated_tokens, out.prompt_tokens);
  free(long_ids);

  /* The same for text: enough words to pass the context. */
  size_t text_size = (size_t)info.context_length * 16 + 1;
  char *text = malloc(text_size);
  CHECK(text != NULL, "out of memory");
  text[0] = '\0';
  size_t used = 0;
  while (used + 16 < text_size) {
    memcpy(text + used, "Once upon a ", 12);
    used += 12;
  }
  text[used] = '\0';
  size_t count = 0;
  EXPECT_STATUS(kiln_tokenize(engine, text, true, NULL, 0, &count),
                KILN_ERROR_BUFFER_TOO_SMALL);
  CHECK(count > (size_t)info.context_length, "the long text is only %zu tokens",
        count);
  EXPECT_ERROR(kiln_submit(engine, text, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "longer than the context");
  free(text);

  /* Reading and cancelling. */
  kiln_event event;
  memset(&event, 0, sizeof event);
  event.struct_size = sizeof event;
  EXPECT_ERROR(kiln_request_next(NULL, &event, 0), KILN_ERROR_INVALID_ARGUMENT,
               "request is NULL");
  EXPECT_ERROR(kiln_cancel(engine, 999999), KILN_ERROR_NOT_FOUND, "999999");
  EXPECT_ERROR(kiln_cancel(NULL, 1), KILN_ERROR_INVALID_ARGUMENT,
               "engine is NULL");
  EXPECT_ERROR(kiln_engine_metrics(engine, NULL), KILN_ERROR_INVALID_ARGUMENT,
               "out is NULL");
  kiln_metrics metrics;
  memset(&metrics, 0, sizeof metrics);
  EXPECT_ERROR(kiln_engine_metrics(engine, &metrics),
               KILN_ERROR_INVALID_ARGUMENT, "struct_size");
  EXPECT_OK(kiln_submit(engine, "Once", NULL, &request));
  EXPECT_ERROR(kiln_request_next(request, &event, -2),
               KILN_ERROR_INVALID_ARGUMENT, "timeout_ms");
  event.struct_size = 0;
  EXPECT_ERROR(kiln_request_next(request, &event, -1),
               KILN_ERROR_INVALID_ARGUMENT, "struct_size");
  kiln_request_release(request);
  kiln_request_release(NULL);
  EXPECT_OK(kiln_engine_close(NULL));

  /* Tokenizer round trip. */
  const char *words = "Once upon a time";
  int32_t tokens[64];
  EXPECT_OK(kiln_tokenize(engine, words, false, tokens, 64, &count));
  CHECK(count > 0, "\"%s\" is no tokens", words);
  size_t needed = 0;
  EXPECT_STATUS(kiln_tokenize(engine, words, false, tokens, count - 1, &needed),
                KILN_ERROR_BUFFER_TOO_SMALL);
  CHECK(needed == count, "tokenize: %zu tokens, then %zu", count, needed);
  char decoded[256];
  size_t length = 0;
  EXPECT_OK(
      kiln_detokenize(engine, tokens, count, decoded, sizeof decoded, &length));
  CHECK(length == strlen(words) && strcmp(decoded, words) == 0,
        "detokenize(tokenize(\"%s\")) is \"%s\"", words, decoded);
  EXPECT_STATUS(
      kiln_detokenize(engine, tokens, count, decoded, length, &length),
      KILN_ERROR_BUFFER_TOO_SMALL);
  tokens[0] = -7;
  EXPECT_ERROR(
      kiln_detokenize(engine, tokens, 1, decoded, sizeof decoded, &length),
      KILN_ERROR_INVALID_ARGUMENT, "-7");

  CHECK(strcmp(kiln_status_name(KILN_ERROR_BUSY), "busy") == 0 &&
            strcmp(kiln_status_name((kiln_status)12345), "unknown") == 0,
        "kiln_status_name");
}

/* A full wait queue and timeouts: one slot and one place to wait, while
 * the engine's thread is held. */
static void test_busy_and_timeout(void) {
  kiln_engine *engine = open_engine(1, 1);
  kiln_sampling forever = greedy(0); /* until the context is full */
  static pacer holder;
  pacer_init(&holder);
  uint64_t holder_id = 0;
  EXPECT_OK(kiln_submit_callback(engine, "Once upon a time", &forever, paced,
                                 &holder, &holder_id));
  pacer_wait(&holder, 1);

  /* The holder has the only slot. Of two more requests one may wait (the
   * queue of one may still count the holder until the engine's thread
   * publishes again); the other finds the queue full. */
  kiln_request *requests[2] = {NULL, NULL};
  int accepted = 1, busy = 0;
  for (int i = 0; i < 2; ++i) {
    kiln_status status =
        kiln_submit(engine, "The little dog", &forever, &requests[i]);
    if (status == KILN_OK) {
      ++accepted;
      continue;
    }
    CHECK(status == KILN_ERROR_BUSY, "submit %d returned %s", i,
          kiln_status_name(status));
    CHECK(strstr(kiln_last_error(), "waiting") != NULL,
          "the busy message does not say requests are waiting");
    CHECK(requests[i] == NULL, "a refused submit left *out set");
    ++busy;
  }
  CHECK(busy >= 1, "2 submits behind 1 running, with a queue of 1: none "
                   "was refused");
  kiln_event event;
  memset(&event, 0, sizeof event);
  event.struct_size = sizeof event;
  for (int i = 0; i < 2; ++i)
    if (requests[i]) {
      /* Nothing moves while the engine is held. */
      EXPECT_STATUS(kiln_request_next(requests[i], &event, 0), KILN_TIMED_OUT);
      EXPECT_STATUS(kiln_request_next(requests[i], &event, 20), KILN_TIMED_OUT);
      CHECK(strstr(kiln_last_error(), "20 ms") != NULL,
            "the timeout message does not give the time");
    }
  EXPECT_OK(kiln_cancel(engine, holder_id));
  pacer_release(&holder);
  for (int i = 0; i < 2; ++i)
    kiln_request_release(requests[i]); /* before their end: cancelled */
  kiln_metrics m = settled_metrics(engine);
  CHECK(m.submitted == accepted && m.cancelled == accepted,
        "%d requests accepted and all cancelled: metrics say %lld "
        "submitted, %lld cancelled",
        accepted, (long long)m.submitted, (long long)m.cancelled);
  EXPECT_OK(kiln_engine_close(engine));
  CHECK(holder.finals == 1 && holder.finish == KILN_FINISH_CANCELLED,
        "the held request ended %d times, finish %d", holder.finals,
        (int)holder.finish);
  pacer_destroy(&holder);
}

/* A prompt longer than the whole KV cache is refused at submission, naming
 * the cache; a sequence that outgrows the whole cache while it generates
 * ends with an error event. */
static void test_kv_too_small(void) {
  kiln_engine_options options;
  kiln_engine_options_init(&options);
  options.threads = engine_threads;
  options.max_sequences = 1;
  options.kv_memory_bytes = 64 * 1024;
  kiln_engine *engine = NULL;
  EXPECT_OK(kiln_engine_open(artifact, &options, &engine));
  kiln_metrics m = metrics_of(engine);
  kiln_engine_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_OK(kiln_engine_info_get(engine, &info));
  int64_t room = (int64_t)m.kv_total_blocks * m.kv_block_positions;
  if (room + 1 > info.context_length) {
    say("64 KiB of KV cache hold the whole context: the errors are not "
        "checked");
    EXPECT_OK(kiln_engine_close(engine));
    return;
  }
  size_t count = (size_t)room + 1;
  int32_t *ids = calloc(count, sizeof *ids);
  CHECK(ids != NULL, "out of memory");
  for (size_t i = 0; i < count; ++i)
    ids[i] = (int32_t)(3 + i % 50);
  kiln_request *request = NULL;
  EXPECT_ERROR(kiln_submit_tokens(engine, ids, count, NULL, &request),
               KILN_ERROR_INVALID_ARGUMENT, "KV cache");
  CHECK(request == NULL, "a refused request has no handle");

  /* room - 4 prompt tokens fit; generating past the cache's end cannot. */
  kiln_sampling sampling;
  kiln_sampling_init(&sampling);
  sampling.temperature = 0;
  sampling.ignore_eos = 1;
  sampling.max_tokens = 64;
  EXPECT_OK(
      kiln_submit_tokens(engine, ids, (size_t)room - 4, &sampling, &request));
  free(ids);
  output out;
  memset(&out, 0, sizeof out);
  read_all(request, &out);
  kiln_request_release(request);
  CHECK(out.finish == KILN_FINISH_ERROR && strstr(out.error, "KV cache"),
        "a sequence outgrowing room for %lld: finish %d, error \"%s\"",
        (long long)room, (int)out.finish, out.error);
  m = settled_metrics(engine);
  CHECK(m.failed == 1 && m.submitted == 1, "metrics: %lld failed of %lld",
        (long long)m.failed, (long long)m.submitted);
  EXPECT_OK(kiln_engine_close(engine));
}

/*===------------------------------------------------------------------===*
 * 2. Greedy: concurrent equals alone
 *===------------------------------------------------------------------===*/

enum { kGreedyRequests = 8, kGreedyThreads = 4, kGreedyTokens = 40 };

static const char *const greedy_prompts[kGreedyRequests] = {
    "Once upon a time",
    "The little dog ran",
    "Lily wanted to play with her ball in the park",
    "One day, a big bear",
    "Tom and Sue went to the sea. They saw a fish and a boat and a bird.",
    "Once upon a time there was",
    "She said hello",
    "x"};

typedef struct greedy_job {
  kiln_engine *engine;
  pthread_barrier_t *start;
  int first; /* the prompts [first, first + per_thread) */
  int per_thread;
  output *outputs;
} greedy_job;

static void *greedy_thread(void *arg) {
  greedy_job *job = arg;
  kiln_sampling sampling = greedy(kGreedyTokens);
  kiln_request *requests[kGreedyRequests];
  pthread_barrier_wait(job->start);
  /* Submit all first, then read: they run in one batch. */
  for (int i = 0; i < job->per_thread; ++i)
    EXPECT_OK(kiln_submit(job->engine, greedy_prompts[job->first + i],
                          &sampling, &requests[i]));
  for (int i = 0; i < job->per_thread; ++i) {
    memset(&job->outputs[job->first + i], 0, sizeof(output));
    read_all(requests[i], &job->outputs[job->first + i]);
    kiln_request_release(requests[i]);
  }
  return NULL;
}

static void test_greedy_concurrent(void) {
  kiln_engine *engine = open_engine(kGreedyRequests, 0);
  static output alone[kGreedyRequests], together[kGreedyRequests];
  kiln_sampling sampling = greedy(kGreedyTokens);
  for (int i = 0; i < kGreedyRequests; ++i) {
    run_alone(engine, greedy_prompts[i], &sampling, &alone[i]);
    CHECK(alone[i].finish == KILN_FINISH_LENGTH &&
              alone[i].generated_tokens == kGreedyTokens,
          "\"%s\" alone: finish %d after %d tokens, expected %d tokens",
          greedy_prompts[i], (int)alone[i].finish, alone[i].generated_tokens,
          kGreedyTokens);
  }

  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, kGreedyThreads);
  pthread_t threads[kGreedyThreads];
  greedy_job jobs[kGreedyThreads];
  const int per_thread = kGreedyRequests / kGreedyThreads;
  for (int t = 0; t < kGreedyThreads; ++t) {
    jobs[t] =
        (greedy_job){engine, &start, t * per_thread, per_thread, together};
    CHECK(pthread_create(&threads[t], NULL, greedy_thread, &jobs[t]) == 0,
          "pthread_create");
  }
  for (int t = 0; t < kGreedyThreads; ++t)
    pthread_join(threads[t], NULL);
  pthread_barrier_destroy(&start);

  for (int i = 0; i < kGreedyRequests; ++i) {
    const output *a = &alone[i], *b = &together[i];
    CHECK(a->length == b->length && memcmp(a->text, b->text, a->length) == 0,
          "\"%s\": concurrent output differs from the output alone:\n"
          "  alone:    \"%s\"\n  together: \"%s\"",
          greedy_prompts[i], a->text, b->text);
    CHECK(a->ntokens == b->ntokens &&
              memcmp(a->tokens, b->tokens, sizeof(int32_t) * a->ntokens) == 0,
          "\"%s\": concurrent tokens differ from the tokens alone",
          greedy_prompts[i]);
    CHECK(a->finish == b->finish && a->prompt_tokens == b->prompt_tokens,
          "\"%s\": finish or prompt length differ", greedy_prompts[i]);
  }
  kiln_metrics m = settled_metrics(engine);
  CHECK(m.submitted == 2 * kGreedyRequests && m.finished == 2 * kGreedyRequests,
        "metrics: %lld submitted, %lld finished; expected %d of each",
        (long long)m.submitted, (long long)m.finished, 2 * kGreedyRequests);
  CHECK(m.generated_tokens == 2 * kGreedyRequests * kGreedyTokens,
        "metrics: %lld tokens generated, expected %d",
        (long long)m.generated_tokens, 2 * kGreedyRequests * kGreedyTokens);
  CHECK(m.time_to_first_token.count == 2 * kGreedyRequests &&
            m.time_to_first_token.p50 > 0 &&
            m.time_to_first_token.p50 <= m.time_to_first_token.p99 &&
            m.inter_token_latency.count ==
                2 * kGreedyRequests * (kGreedyTokens - 1),
        "latency metrics: %lld first tokens (p50 %g, p99 %g), %lld "
        "inter-token",
        (long long)m.time_to_first_token.count, m.time_to_first_token.p50,
        m.time_to_first_token.p99, (long long)m.inter_token_latency.count);
  expect_only_cached_blocks(&m, "after the greedy requests");
  EXPECT_OK(kiln_engine_close(engine));
  say("greedy: %d requests from %d threads equal each alone (%d tokens "
      "each)",
      kGreedyRequests, kGreedyThreads, kGreedyTokens);
}

/*===------------------------------------------------------------------===*
 * 3. Cancelling frees the KV cache
 *===------------------------------------------------------------------===*/

/* Reads what has arrived, without waiting. */
static void drain(kiln_request *request, output *out) {
  kiln_event event;
  memset(&event, 0, sizeof event);
  event.struct_size = sizeof event;
  while (out->finals == 0 && kiln_request_next(request, &event, 0) == KILN_OK)
    take_event(out, &event);
}

static int32_t blocks_for(int64_t positions, int32_t block) {
  return (int32_t)((positions + block - 1) / block);
}

/*
 * The KV accounting (runtime/KVBlockTables.h, StepExecutor.h's
 * KVCacheUsage): kv_used_blocks counts every block with a reference, the
 * prefix cache's included; kv_cached_blocks counts the prefix cache's
 * entries, one block each. The engine caches a prompt's whole blocks once
 * its prefill is done (and a preempted sequence's computed blocks: these
 * checks require no preemptions), never generated tokens. A sequence
 * holds the blocks covering its reserved positions, and the scheduler
 * reserves one position ahead for the token a step feeds. So, with the
 * engine held by the paced request P at its token k (the step that fed
 * token k-1 at position |P| + k - 2):
 *
 *   used - cached = (blocks_for(|P| + k - 1) - |P| / B)
 *                 + (blocks_for(|V| + n) - |V| / B)    while V runs,
 *                                                      n tokens received
 *
 * (prompts with different first blocks, B positions a block), and once V
 * is cancelled its term is gone: its blocks are free, but for its prompt's
 * whole blocks, which stay in the prefix cache.
 */
static void test_cancel(void) {
  enum { kPacedPrompt = 40, kVictimPrompt = 37, kVictimTokens = 40 };
  kiln_engine *engine = open_engine(4, 0);
  kiln_sampling forever = greedy(0);
  int32_t paced_ids[kPacedPrompt], victim_ids[kVictimPrompt];
  for (int i = 0; i < kPacedPrompt; ++i)
    paced_ids[i] = 3 + i;
  for (int i = 0; i < kVictimPrompt; ++i)
    victim_ids[i] = 100 + i;

  static pacer p;
  pacer_init(&p);
  uint64_t paced_id = 0;
  EXPECT_OK(kiln_submit_tokens_callback(engine, paced_ids, kPacedPrompt,
                                        &forever, paced, &p, &paced_id));
  pacer_wait(&p, 1);
  kiln_request *victim = NULL;
  EXPECT_OK(
      kiln_submit_tokens(engine, victim_ids, kVictimPrompt, &forever, &victim));
  output v;
  memset(&v, 0, sizeof v);
  int k = 1;
  while (v.ntokens < kVictimTokens) {
    k = pacer_step(&p);
    drain(victim, &v);
    CHECK(v.finals == 0 && !pacer_ended(&p), "a request ended early");
  }

  kiln_metrics during = metrics_of(engine);
  const int32_t block = during.kv_block_positions;
  CHECK(block > 0, "kv_block_positions is %d", block);
  const int32_t cached = kPacedPrompt / block + kVictimPrompt / block;
  int32_t paced_own =
      blocks_for(kPacedPrompt + k - 1, block) - kPacedPrompt / block;
  int32_t victim_own =
      blocks_for(kVictimPrompt + v.ntokens, block) - kVictimPrompt / block;
  CHECK(during.running == 2 && during.kv_cached_blocks == cached,
        "while both run: %d running, %d cached blocks (the prompts' whole "
        "blocks are %d)",
        during.running, during.kv_cached_blocks, cached);
  CHECK(during.kv_used_blocks - during.kv_cached_blocks ==
            paced_own + victim_own,
        "while both run: %d used - %d cached blocks; expected %d of the "
        "paced request (%d tokens) + %d of the other (%d tokens)",
        during.kv_used_blocks, during.kv_cached_blocks, paced_own, k,
        victim_own, v.ntokens);

  /* Cancelled while the engine is held: the engine finishes the step it
   * is in (one more token), then drops the request before the next. */
  const int before = v.ntokens;
  EXPECT_OK(kiln_request_cancel(victim));
  k = pacer_step(&p);
  read_all(victim, &v);
  CHECK(v.finish == KILN_FINISH_CANCELLED,
        "a request cancelled mid-generation ended with finish %d",
        (int)v.finish);
  CHECK(v.generated_tokens == before + 1,
        "cancelled after %d tokens, within the step that made token %d: it "
        "ended with %d",
        before, before + 1, v.generated_tokens);
  kiln_metrics after = metrics_of(engine);
  paced_own = blocks_for(kPacedPrompt + k - 1, block) - kPacedPrompt / block;
  CHECK(after.cancelled == 1 && after.running == 1,
        "after the cancel: %lld cancelled, %d running",
        (long long)after.cancelled, after.running);
  CHECK(after.kv_cached_blocks == cached &&
            after.kv_used_blocks - after.kv_cached_blocks == paced_own,
        "after the cancel: %d used - %d cached blocks, expected %d cached "
        "and %d of the request left (%d tokens): the cancelled request's "
        "blocks were not freed",
        after.kv_used_blocks, after.kv_cached_blocks, cached, paced_own, k);
  CHECK(after.kv_used_blocks < during.kv_used_blocks,
        "%d KV blocks used before the cancel, %d after", during.kv_used_blocks,
        after.kv_used_blocks);
  EXPECT_OK(kiln_request_cancel(victim)); /* ended: a no-op */
  EXPECT_STATUS(kiln_cancel(engine, v.id), KILN_ERROR_NOT_FOUND);
  kiln_request_release(victim);

  /* The other one, by id. */
  EXPECT_OK(kiln_cancel(engine, paced_id));
  pacer_release(&p);
  pacer_wait_end(&p);
  CHECK(p.finish == KILN_FINISH_CANCELLED,
        "cancelled by id, it ended with finish %d", (int)p.finish);
  kiln_metrics end = settled_metrics(engine);
  CHECK(end.preemptions == 0, "%lld preemptions with room for all",
        (long long)end.preemptions);
  CHECK(end.cancelled == 2 && end.finished == 0 && end.failed == 0,
        "metrics: %lld finished, %lld cancelled, %lld failed",
        (long long)end.finished, (long long)end.cancelled,
        (long long)end.failed);
  expect_only_cached_blocks(&end, "after both were cancelled");
  CHECK(end.kv_used_blocks == cached,
        "%d KV blocks used after both ended; their prompts' whole blocks "
        "are %d",
        end.kv_used_blocks, cached);
  CHECK(end.kv_peak_used_blocks >= during.kv_used_blocks,
        "kv_peak_used_blocks %d < the %d used while both ran",
        end.kv_peak_used_blocks, during.kv_used_blocks);
  EXPECT_OK(kiln_engine_close(engine));
  pacer_destroy(&p);
  say("cancel: finish cancelled; the KV blocks back (%d used while both "
      "ran, %d after, %d = the prompts' cached blocks at the end)",
      during.kv_used_blocks, after.kv_used_blocks, end.kv_used_blocks);
}

/*===------------------------------------------------------------------===*
 * 4. Callbacks
 *===------------------------------------------------------------------===*/

typedef struct collected {
  pthread_mutex_t lock;
  pthread_cond_t done;
  output out;
} collected;

static void collect(const kiln_event *event, void *user) {
  collected *c = user;
  pthread_mutex_lock(&c->lock);
  take_event(&c->out, event);
  if (event->finish != KILN_FINISH_NONE)
    pthread_cond_broadcast(&c->done);
  pthread_mutex_unlock(&c->lock);
}

static void collected_init(collected *c) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->done, NULL);
}

static void collected_wait(collected *c) {
  pthread_mutex_lock(&c->lock);
  while (c->out.finals == 0)
    pthread_cond_wait(&c->done, &c->lock);
  pthread_mutex_unlock(&c->lock);
}

static void collected_destroy(collected *c) {
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->done);
}

typedef struct close_job {
  kiln_engine *engine;
  kiln_status status;
} close_job;

static void *close_thread(void *arg) {
  close_job *job = arg;
  job->status = kiln_engine_close(job->engine);
  return NULL;
}

static void test_callbacks(void) {
  kiln_engine *engine = open_engine(4, 0);
  kiln_sampling sampling = greedy(48);
  sampling.logprobs = true;
  sampling.top_logprobs = 3;

  output streamed;
  run_alone(engine, "Once upon a time", &sampling, &streamed);
  static collected called;
  collected_init(&called);
  uint64_t id = 0;
  EXPECT_OK(kiln_submit_callback(engine, "Once upon a time", &sampling, collect,
                                 &called, &id));
  collected_wait(&called);
  pthread_mutex_lock(&called.lock);
  const output *a = &streamed, *b = &called.out;
  CHECK(b->id == id,
        "the callback's events say request %llu, submit said "
        "%llu",
        (unsigned long long)b->id, (unsigned long long)id);
  CHECK(a->length == b->length && memcmp(a->text, b->text, a->length) == 0,
        "callback and stream texts differ:\n  stream:   \"%s\"\n  "
        "callback: \"%s\"",
        a->text, b->text);
  CHECK(a->ntokens == b->ntokens &&
            memcmp(a->tokens, b->tokens, sizeof(int32_t) * a->ntokens) == 0 &&
            memcmp(a->logprobs, b->logprobs, sizeof(float) * a->ntokens) == 0,
        "callback and stream tokens or log-probabilities differ");
  CHECK(a->finish == b->finish && a->generated_tokens == b->generated_tokens,
        "callback and stream finish differently");
  CHECK(a->logprobs[0] <= 0 && a->logprobs[0] != 1.0f,
        "logprobs asked for, none reported");
  pthread_mutex_unlock(&called.lock);

  /* Closing ends what is left: a stream (readable after the close) and a
   * callback, whose last event tries to submit and to close. The callback
   * request holds the engine at each token, so neither can end before the
   * close cancels them. */
  kiln_sampling forever = greedy(0);
  static pacer closing;
  pacer_init(&closing);
  closing.engine = engine;
  EXPECT_OK(
      kiln_submit_callback(engine, "One day", &forever, paced, &closing, NULL));
  pacer_wait(&closing, 1);
  kiln_request *open_stream = NULL;
  EXPECT_OK(kiln_submit(engine, "The little dog", &forever, &open_stream));
  pacer_step(&closing);
  close_job job = {engine, KILN_ERROR_INTERNAL};
  pthread_t closer;
  CHECK(pthread_create(&closer, NULL, close_thread, &job) == 0,
        "pthread_create");
  /* One step at a time until the close cancels them (far fewer steps than
   * the context holds). */
  for (int i = 0; i < 400 && !pacer_ended(&closing); ++i)
    pacer_step(&closing);
  CHECK(pacer_ended(&closing), "400 steps after kiln_engine_close began, "
                               "the callback request still runs");
  pthread_join(closer, NULL);
  EXPECT_OK(job.status);
  /* After the close: every event is there, the last says cancelled. */
  CHECK(closing.finals == 1 && closing.finish == KILN_FINISH_CANCELLED,
        "at close, the callback request got %d last events (finish %d)",
        closing.finals, (int)closing.finish);
  CHECK(closing.submit_at_end == KILN_ERROR_SHUT_DOWN,
        "a callback submitting during close got %s, expected shut_down",
        kiln_status_name(closing.submit_at_end));
  CHECK(closing.close_at_end == KILN_ERROR_INVALID_ARGUMENT,
        "kiln_engine_close from a callback returned %s",
        kiln_status_name(closing.close_at_end));
  output first;
  memset(&first, 0, sizeof first);
  read_all(open_stream, &first);
  CHECK(first.finish == KILN_FINISH_CANCELLED,
        "a stream open at close ended with finish %d", (int)first.finish);
  EXPECT_OK(kiln_request_cancel(open_stream)); /* ended: a no-op */
  kiln_request_release(open_stream);
  pacer_destroy(&closing);
  CHECK(called.out.finals == 1,
        "the first callback request got %d last "
        "events",
        called.out.finals);
  collected_destroy(&called);
  say("callbacks: the same text, tokens and log-probabilities as a stream; "
      "close ends streams and callbacks");
}

/*===------------------------------------------------------------------===*
 * 5. Submitters and cancellers
 *===------------------------------------------------------------------===*/

enum { kMaxIds = 1 << 16 };

typedef struct stress {
  kiln_engine *engine;
  int32_t vocab_size;
  /* Every id submitted, for the cancellers. */
  pthread_mutex_t lock;
  uint64_t ids[kMaxIds];
  int id_count;
  atomic_int submitters_left;
  /* Callback requests' records, until the engine is closed. */
  pthread_cond_t callback_done;
} stress;

typedef struct callback_record {
  stress *s;
  uint64_t id; /* from the event */
  int events;
  int finals;
  int after_final;
  kiln_finish_reason finish;
} callback_record;

typedef struct submitter {
  stress *s;
  int index;
  pthread_t thread;
  callback_record *records;
  int callbacks;
  /* Counts of what this thread saw. */
  int submitted, ended, finished, cancelled, failed, released_early;
} submitter;

typedef struct canceller {
  stress *s;
  int index;
  pthread_t thread;
  int cancelled, not_found, metrics_reads;
} canceller;

static void on_stress_event(const kiln_event *event, void *user) {
  callback_record *r = user;
  pthread_mutex_lock(&r->s->lock);
  if (r->events == 0)
    r->id = event->request_id;
  if (r->finals > 0 || event->request_id != r->id)
    ++r->after_final; /* counted as an error */
  ++r->events;
  if (event->finish != KILN_FINISH_NONE) {
    ++r->finals;
    r->finish = event->finish;
    pthread_cond_broadcast(&r->s->callback_done);
  }
  pthread_mutex_unlock(&r->s->lock);
}

static void register_id(stress *s, uint64_t id) {
  pthread_mutex_lock(&s->lock);
  CHECK(s->id_count < kMaxIds, "too many requests");
  s->ids[s->id_count++] = id;
  pthread_mutex_unlock(&s->lock);
}

static void count_finish(submitter *me, kiln_finish_reason finish) {
  ++me->ended;
  if (finish == KILN_FINISH_CANCELLED)
    ++me->cancelled;
  else if (finish == KILN_FINISH_ERROR)
    ++me->failed;
  else
    ++me->finished;
}

static const char *const stress_prompts[] = {
    "Once upon a time", "The cat",
    "A boy and a girl", "Hello",
    "It was",           "Lily and Tom played in the garden all day long"};

static void *submitter_thread(void *arg) {
  submitter *me = arg;
  stress *s = me->s;
  uint64_t random = 0x9e3779b97f4a7c15ull * (uint64_t)(me->index + 1);
  const char *stop[] = {" the", "."};
  for (int i = 0; i < iterations; ++i) {
    kiln_sampling sampling;
    kiln_sampling_init(&sampling);
    sampling.max_tokens = 1 + (int32_t)(next_random(&random) % 48);
    if (next_random(&random) % 2) {
      sampling.temperature = 0;
    } else {
      sampling.temperature = 0.8f;
      sampling.has_seed = true;
      sampling.seed = next_random(&random);
    }
    if (next_random(&random) % 4 == 0) {
      sampling.stop_strings = stop;
      sampling.stop_string_count = 2;
    }
    sampling.ignore_eos = next_random(&random) % 2;
    if (next_random(&random) % 3 == 0) {
      sampling.logprobs = true;
      sampling.top_logprobs = 2;
    }

    /* A text prompt, or random token ids. */
    int32_t ids[24];
    size_t nids = 0;
    const char *prompt = NULL;
    if (next_random(&random) % 2) {
      prompt = stress_prompts[next_random(&random) %
                              (sizeof stress_prompts / sizeof *stress_prompts)];
    } else {
      nids = 1 + next_random(&random) % 24;
      for (size_t k = 0; k < nids; ++k)
        ids[k] =
            3 + (int32_t)(next_random(&random) % (uint32_t)(s->vocab_size - 3));
    }

    uint32_t style = next_random(&random) % 8;
    if (style < 3) { /* callback */
      callback_record *r = &me->records[me->callbacks++];
      r->s = s;
      uint64_t id = 0;
      kiln_status status =
          prompt ? kiln_submit_callback(s->engine, prompt, &sampling,
                                        on_stress_event, r, &id)
                 : kiln_submit_tokens_callback(s->engine, ids, nids, &sampling,
                                               on_stress_event, r, &id);
      CHECK(status == KILN_OK, "submit_callback returned %s",
            kiln_status_name(status));
      ++me->submitted;
      register_id(s, id);
      pthread_mutex_lock(&s->lock);
      while (r->finals == 0)
        pthread_cond_wait(&s->callback_done, &s->lock);
      CHECK(r->id == id, "callback events say request %llu, submit %llu",
            (unsigned long long)r->id, (unsigned long long)id);
      kiln_finish_reason finish = r->finish;
      pthread_mutex_unlock(&s->lock);
      count_finish(me, finish);
      continue;
    }

    kiln_request *request = NULL;
    kiln_status status =
        prompt ? kiln_submit(s->engine, prompt, &sampling, &request)
               : kiln_submit_tokens(s->engine, ids, nids, &sampling, &request);
    CHECK(status == KILN_OK, "submit returned %s", kiln_status_name(status));
    ++me->submitted;
    register_id(s, kiln_request_id(request));
    output out;
    memset(&out, 0, sizeof out);
    if (style == 7) {
      /* Released before its end (maybe): the release cancels it. */
      read_tokens(request, &out, (int)(next_random(&random) % 3));
      ++me->released_early;
      kiln_request_release(request);
      continue;
    }
    read_all(request, &out);
    CHECK(out.finals == 1, "a request ended %d times", out.finals);
    CHECK(out.finish != KILN_FINISH_ERROR, "request failed: %s", out.error);
    CHECK(out.finish == KILN_FINISH_CANCELLED ||
              out.generated_tokens <= sampling.max_tokens,
          "%d tokens generated with max_tokens %d", out.generated_tokens,
          sampling.max_tokens);
    count_finish(me, out.finish);
    kiln_request_release(request);
  }
  atomic_fetch_sub(&s->submitters_left, 1);
  return NULL;
}

static void *canceller_thread(void *arg) {
  canceller *me = arg;
  stress *s = me->s;
  uint64_t random = 0xdeadbeefull * (uint64_t)(me->index + 7);
  while (atomic_load(&s->submitters_left) > 0) {
    pthread_mutex_lock(&s->lock);
    /* Mostly the newest ids, which may still run; sometimes any. */
    uint64_t id = 0;
    if (s->id_count > 0) {
      uint32_t span = (uint32_t)s->id_count;
      if (next_random(&random) % 4 != 0 && span > 8)
        span = 8;
      id = s->ids[s->id_count - 1 - (int)(next_random(&random) % span)];
    }
    pthread_mutex_unlock(&s->lock);
    if (id) {
      kiln_status status = kiln_cancel(s->engine, id);
      if (status == KILN_OK)
        ++me->cancelled;
      else if (status == KILN_ERROR_NOT_FOUND)
        ++me->not_found;
      else
        CHECK(0, "kiln_cancel returned %s", kiln_status_name(status));
    }
    if (next_random(&random) % 8 == 0) {
      metrics_of(s->engine); /* checks its invariants */
      ++me->metrics_reads;
    }
    sleep_ms(0.1 + (double)(next_random(&random) % 10) * 0.1);
  }
  return NULL;
}

static void test_stress(void) {
  static stress s;
  memset(&s, 0, sizeof s);
  s.engine = open_engine(4, 0);
  kiln_engine_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_OK(kiln_engine_info_get(s.engine, &info));
  s.vocab_size = info.vocab_size;
  pthread_mutex_init(&s.lock, NULL);
  pthread_cond_init(&s.callback_done, NULL);
  atomic_store(&s.submitters_left, submitters);

  submitter *subs = calloc((size_t)submitters, sizeof *subs);
  canceller *cans = calloc((size_t)cancellers, sizeof *cans);
  CHECK(subs && cans, "out of memory");
  double start = now_seconds();
  for (int i = 0; i < submitters; ++i) {
    subs[i].s = &s;
    subs[i].index = i;
    subs[i].records = calloc((size_t)iterations, sizeof(callback_record));
    CHECK(subs[i].records, "out of memory");
    CHECK(pthread_create(&subs[i].thread, NULL, submitter_thread, &subs[i]) ==
              0,
          "pthread_create");
  }
  for (int i = 0; i < cancellers; ++i) {
    cans[i].s = &s;
    cans[i].index = i;
    CHECK(pthread_create(&cans[i].thread, NULL, canceller_thread, &cans[i]) ==
              0,
          "pthread_create");
  }
  int submitted = 0, ended = 0, finished = 0, cancelled = 0, failed = 0;
  int released_early = 0, cancel_ok = 0, not_found = 0;
  for (int i = 0; i < submitters; ++i) {
    pthread_join(subs[i].thread, NULL);
    submitted += subs[i].submitted;
    ended += subs[i].ended;
    finished += subs[i].finished;
    cancelled += subs[i].cancelled;
    failed += subs[i].failed;
    released_early += subs[i].released_early;
  }
  for (int i = 0; i < cancellers; ++i) {
    pthread_join(cans[i].thread, NULL);
    cancel_ok += cans[i].cancelled;
    not_found += cans[i].not_found;
  }

  kiln_metrics m = settled_metrics(s.engine);
  CHECK(m.submitted == submitted,
        "the test submitted %d requests, the metrics say %lld", submitted,
        (long long)m.submitted);
  CHECK(m.finished + m.cancelled + m.failed == m.submitted,
        "metrics: %lld finished + %lld cancelled + %lld failed != %lld "
        "submitted",
        (long long)m.finished, (long long)m.cancelled, (long long)m.failed,
        (long long)m.submitted);
  CHECK(ended + released_early == submitted,
        "%d requests ended and %d were released early, of %d", ended,
        released_early, submitted);
  /* What the test saw of each outcome, give or take the requests released
   * before their end (seen by the engine only). */
  CHECK(m.failed == 0 && failed == 0, "%lld requests failed",
        (long long)m.failed);
  CHECK(m.finished >= finished && m.finished <= finished + released_early,
        "metrics: %lld finished; the test saw %d (+ %d released early)",
        (long long)m.finished, finished, released_early);
  CHECK(m.cancelled >= cancelled && m.cancelled <= cancelled + released_early,
        "metrics: %lld cancelled; the test saw %d (+ %d released early)",
        (long long)m.cancelled, cancelled, released_early);
  /* Every cancelled end the test saw follows a cancel that took (one
   * that took may still lose the race with the request's own end). */
  CHECK(cancelled <= cancel_ok,
        "%d requests ended cancelled, but only %d kiln_cancel calls took",
        cancelled, cancel_ok);
  CHECK(m.cancelled <= cancel_ok + released_early,
        "metrics: %lld cancelled; %d cancels took and %d requests were "
        "released early",
        (long long)m.cancelled, cancel_ok, released_early);
  expect_only_cached_blocks(&m, "after the stress test");
  EXPECT_OK(kiln_engine_close(s.engine));

  /* After the close no callback may come: each record still has one last
   * event and no other event after it. */
  for (int i = 0; i < submitters; ++i) {
    for (int k = 0; k < subs[i].callbacks; ++k) {
      const callback_record *r = &subs[i].records[k];
      CHECK(r->finals == 1 && r->after_final == 0,
            "callback request %llu: %d last events, %d events after the "
            "last or for another id",
            (unsigned long long)r->id, r->finals, r->after_final);
    }
    free(subs[i].records);
  }
  free(subs);
  free(cans);
  pthread_mutex_destroy(&s.lock);
  pthread_cond_destroy(&s.callback_done);
  say("stress: %d submitters x %d requests, %d cancellers: %d finished, %d "
      "cancelled (%d cancels took, %d found nothing), %d released early; "
      "%.1f s",
      submitters, iterations, cancellers, (int)m.finished, (int)m.cancelled,
      cancel_ok, not_found, released_early, now_seconds() - start);
}

/*===------------------------------------------------------------------===*/

static int positive_arg(const char *name, const char *value) {
  char *end = NULL;
  long n = value ? strtol(value, &end, 10) : -1;
  if (!value || *end != '\0' || n < 0 || n > 100000) {
    fprintf(stderr, "kiln-capi-test: %s needs a count, not '%s'\n", name,
            value ? value : "");
    exit(2);
  }
  return (int)n;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(arg, "--threads") == 0)
      engine_threads = positive_arg(arg, value), ++i;
    else if (strcmp(arg, "--submitters") == 0)
      submitters = positive_arg(arg, value), ++i;
    else if (strcmp(arg, "--cancellers") == 0)
      cancellers = positive_arg(arg, value), ++i;
    else if (strcmp(arg, "--iterations") == 0)
      iterations = positive_arg(arg, value), ++i;
    else if (arg[0] != '-' && !artifact)
      artifact = arg;
    else {
      fprintf(stderr,
              "usage: kiln-capi-test ARTIFACT [--threads N] [--submitters N] "
              "[--cancellers N] [--iterations N]\n");
      return 2;
    }
  }
  if (!artifact) {
    fprintf(stderr, "kiln-capi-test: give the artifact to test with\n");
    return 2;
  }
  if (submitters < 1)
    submitters = 1;

  double start = now_seconds();
  test_unsupported_cpu();
  test_bad_open();
  kiln_engine *engine = open_engine(4, 0);
  test_bad_requests(engine);
  EXPECT_OK(kiln_engine_close(engine));
  test_busy_and_timeout();
  test_kv_too_small();
  say("bad input: the right statuses and messages");
  test_greedy_concurrent();
  test_cancel();
  test_callbacks();
  test_stress();
  say("all passed in %.1f s", now_seconds() - start);
  return 0;
}
