//===- ThreadPool.h - The pool generated kernels run on ---------*- C++ -*-===//
//
// Part of Kiln. A fixed set of worker threads that runs `parallelFor` calls
// from generated code (through the kiln_parallel struct of StepABI.h). A
// decode step makes about a hundred calls of a few microseconds each, so the
// pool is built for low overhead per call rather than for throughput of big
// jobs:
//
//  - workers are created once; a call publishes its job by bumping an epoch
//    counter, and every thread, the caller's included, takes chunks from one
//    atomic counter until none are left (no work stealing, no queues);
//  - idle workers spin on the epoch for a bounded time (tens of
//    microseconds) and then sleep on a futex, so back-to-back calls find them
//    awake while an oversubscribed machine (more pool threads than cores, as
//    when tests run in parallel) is not eaten by spinning;
//  - the caller never waits for a worker to wake up: it only waits for the
//    chunks that workers have already taken.
//
// Rules for tasks:
//  - a kiln_task_fn must not throw: an exception escaping it terminates the
//    program (std::terminate), on whatever thread it ran;
//  - a parallelFor called from inside a task (of this pool or any other)
//    runs serially on the calling thread, in chunks of at most `grain`: the
//    pool's threads are already busy with the outer call, and waiting for
//    them from inside it could deadlock.
//
// Calls from several threads to one pool are serialized: each runs alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_THREADPOOL_H
#define KILN_RUNTIME_THREADPOOL_H

#include "runtime/StepABI.h"

#include <cstdint>
#include <memory>

namespace kiln::runtime {

class ThreadPool {
public:
  /// A pool of `threads` threads in all, the caller of parallelFor counted
  /// (so `threads - 1` workers are started). 0 means one per CPU this
  /// process may run on. 1 runs every call inline, starting no thread.
  explicit ThreadPool(int threads = 0);
  /// Stops and joins the workers. No parallelFor may be running.
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads that run a call, the caller's included.
  int threads() const;

  /// Runs fn(ctx, begin, end) over [0, n) in chunks of at most `grain`
  /// items (the last may be shorter) on the pool's threads and the calling
  /// one, and returns when every chunk is done. Every index is in exactly
  /// one chunk. n <= 0 returns at once; grain <= 0 lets the pool choose
  /// (one chunk per thread).
  void parallelFor(int64_t n, int64_t grain, kiln_task_fn fn, void *ctx);

  /// This pool as generated code sees it: parallel_for calls parallelFor.
  /// Valid while the pool lives.
  kiln_parallel abi();

private:
  struct State;
  std::unique_ptr<State> state;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_THREADPOOL_H
