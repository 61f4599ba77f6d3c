//===- ThreadPool.cpp - The pool generated kernels run on -----------------===//
//
// Part of Kiln. How one call runs (see ThreadPool.h for the contract):
//
//  1. The caller writes the job (fn, ctx, n, grain) into the pool, opens the
//     gate and bumps the epoch; workers spinning on the epoch see it at once,
//     sleeping ones are woken through a futex.
//  2. A worker that sees a new epoch enters through the gate (a reference
//     count, refused once the gate is closed), takes chunks from the shared
//     counter until they run out, and leaves.
//  3. The caller takes chunks too. When they run out it closes the gate and
//     waits until no worker is inside: every chunk taken is then done, and no
//     worker can read the job while the next call rewrites it.
//
// A worker that wakes late only finds a closed gate (or the next job's open
// one, which is as good), so the caller never waits for anyone's wake-up.
//
//===----------------------------------------------------------------------===//

#include "runtime/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kiln::runtime {

namespace {

/// How long an idle thread spins before it sleeps. Long enough to bridge
/// the serial gaps between a decode step's calls, short enough that spinning
/// threads do not starve others on an oversubscribed machine.
constexpr auto kSpinTime = std::chrono::microseconds(50);

/// Gate bits: the low bits count workers inside the current job.
constexpr uint32_t kGateClosed = 1u << 31;
constexpr uint32_t kCallerWaiting = 1u << 30;
constexpr uint32_t kRefMask = kCallerWaiting - 1;

/// Whether this thread is running a task, of any pool: a parallelFor from
/// inside one runs serially (ThreadPool.h).
thread_local bool tlsInTask = false;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Sleeps while `word` holds `expected` (or until a spurious wake-up).
void futexWait(std::atomic<uint32_t> &word, uint32_t expected) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAIT_PRIVATE,
          expected, nullptr, nullptr, 0);
#else
  (void)word;
  (void)expected;
  std::this_thread::yield();
#endif
}

void futexWake(std::atomic<uint32_t> &word, int count) {
#if defined(__linux__)
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(&word), FUTEX_WAKE_PRIVATE,
          count, nullptr, nullptr, 0);
#else
  (void)word;
  (void)count;
#endif
}

/// Spins until `done()` or kSpinTime has passed; returns whether done. The
/// clock is read only every 64 pauses.
template <typename Done> bool spinUntil(Done done) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done())
        return true;
      cpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline)
      return done();
  }
}

int defaultThreadCount() {
#if defined(__linux__)
  // The CPUs this process may use (taskset, cgroup cpusets), not the
  // machine's.
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

/// [0, n) in chunks of `grain`, all on this thread.
void runSerially(int64_t n, int64_t grain, kiln_task_fn fn, void *ctx) {
  for (int64_t begin = 0; begin < n; begin += grain)
    fn(ctx, begin, std::min(n, begin + grain));
}

} // namespace

struct ThreadPool::State {
  int threads = 1;
  std::vector<std::thread> workers;
  /// One call at a time per pool.
  std::mutex submit;

  // The job. Written by the caller only while the gate is closed and empty;
  // read by workers only from inside the gate.
  kiln_task_fn fn = nullptr;
  void *ctx = nullptr;
  int64_t n = 0, grain = 1, chunks = 0;

  // Each atomic on its own cache line: workers hammer nextChunk and the gate
  // while spinning ones poll the epoch.
  alignas(64) std::atomic<int64_t> nextChunk{0};
  alignas(64) std::atomic<uint32_t> gate{kGateClosed};
  alignas(64) std::atomic<uint32_t> epoch{0};
  std::atomic<int> sleepers{0};
  std::atomic<bool> stopping{false};

  /// Runs chunks of the current job until none are left.
  void runChunks() noexcept {
    bool outer = tlsInTask;
    tlsInTask = true;
    for (int64_t c = nextChunk.fetch_add(1, std::memory_order_relaxed);
         c < chunks; c = nextChunk.fetch_add(1, std::memory_order_relaxed)) {
      int64_t begin = c * grain;
      fn(ctx, begin, std::min(n, begin + grain));
    }
    tlsInTask = outer;
  }

  /// Enters the gate unless it is closed.
  bool enter() {
    uint32_t g = gate.load(std::memory_order_relaxed);
    do {
      if (g & kGateClosed)
        return false;
    } while (!gate.compare_exchange_weak(g, g + 1, std::memory_order_acquire,
                                         std::memory_order_relaxed));
    return true;
  }

  void leave() {
    uint32_t previous = gate.fetch_sub(1, std::memory_order_release);
    if ((previous & kCallerWaiting) && (previous & kRefMask) == 1)
      futexWake(gate, 1);
  }

  /// Waits (spinning, then sleeping) until the epoch differs from `seen`;
  /// returns the new one.
  uint32_t waitForEpoch(uint32_t seen) {
    auto changed = [&] {
      return epoch.load(std::memory_order_acquire) != seen;
    };
    while (!spinUntil(changed)) {
      // Announce the sleep before the last look at the epoch; the caller
      // bumps the epoch before looking at sleepers, so one of us sees the
      // other (both seq_cst).
      sleepers.fetch_add(1);
      if (epoch.load() == seen)
        futexWait(epoch, seen);
      sleepers.fetch_sub(1);
    }
    return epoch.load(std::memory_order_acquire);
  }

  void workerMain() noexcept {
    tlsInTask = true;
    uint32_t seen = 0;
    for (;;) {
      seen = waitForEpoch(seen);
      if (stopping.load(std::memory_order_acquire))
        return;
      if (enter()) {
        runChunks();
        leave();
      }
    }
  }

  /// Publishes a new epoch and wakes sleeping workers.
  void bumpEpoch() {
    epoch.fetch_add(1);
    if (sleepers.load() > 0)
      futexWake(epoch, INT_MAX);
  }

  /// Closes the gate and waits until every worker inside has left.
  void closeAndDrain() {
    uint32_t g = gate.fetch_or(kGateClosed, std::memory_order_acq_rel);
    if (g & kRefMask) {
      auto drained = [&] {
        return (gate.load(std::memory_order_acquire) & kRefMask) == 0;
      };
      if (!spinUntil(drained)) {
        for (;;) {
          g = gate.fetch_or(kCallerWaiting, std::memory_order_acq_rel);
          if ((g & kRefMask) == 0)
            break;
          futexWait(gate, g | kCallerWaiting);
        }
      }
    }
    // Closed and empty: nobody can enter or is inside.
    gate.store(kGateClosed, std::memory_order_relaxed);
  }
};

ThreadPool::ThreadPool(int threads) : state(std::make_unique<State>()) {
  state->threads = threads > 0 ? threads : defaultThreadCount();
  state->workers.reserve(state->threads - 1);
  for (int i = 1; i < state->threads; ++i)
    state->workers.emplace_back([s = state.get()] { s->workerMain(); });
}

ThreadPool::~ThreadPool() {
  state->stopping.store(true, std::memory_order_release);
  state->bumpEpoch();
  for (std::thread &worker : state->workers)
    worker.join();
}

int ThreadPool::threads() const { return state->threads; }

void ThreadPool::parallelFor(int64_t n, int64_t grain, kiln_task_fn fn,
                             void *ctx) {
  if (n <= 0)
    return;
  State &s = *state;
  if (grain <= 0)
    grain = (n + s.threads - 1) / s.threads;
  int64_t chunks = (n - 1) / grain + 1;
  if (s.threads == 1 || chunks == 1 || tlsInTask) {
    runSerially(n, grain, fn, ctx);
    return;
  }

  std::lock_guard<std::mutex> lock(s.submit);
  s.fn = fn;
  s.ctx = ctx;
  s.n = n;
  s.grain = grain;
  s.chunks = chunks;
  s.nextChunk.store(0, std::memory_order_relaxed);
  // Opening the gate publishes the job to whoever enters it.
  s.gate.store(0, std::memory_order_release);
  s.bumpEpoch();
  s.runChunks();
  s.closeAndDrain();
}

kiln_parallel ThreadPool::abi() {
  kiln_parallel p;
  p.pool = this;
  p.parallel_for = [](void *pool, int64_t n, int64_t grain, kiln_task_fn fn,
                      void *ctx) {
    static_cast<ThreadPool *>(pool)->parallelFor(n, grain, fn, ctx);
  };
  p.threads = state->threads;
  return p;
}

} // namespace kiln::runtime
