//===- ThreadPoolTest.cpp - The runtime's thread pool ---------------------===//
//
// Part of Kiln's unit tests. Links only kiln_runtime (no MLIR). Checks that
// parallelFor visits every index exactly once whatever the sizes, that it
// survives many back-to-back calls and oversubscription (more pool threads
// than cores, as when ctest runs tests in parallel), and the ABI struct.
// Timings are printed, never asserted.
//
//===----------------------------------------------------------------------===//

#include "runtime/ThreadPool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

using kiln::runtime::ThreadPool;

namespace {

/// Counts visits per index and checks every chunk against `grain`.
struct Coverage {
  explicit Coverage(int64_t n, int64_t grain) : visits(n), grain(grain) {}
  std::vector<std::atomic<int>> visits;
  int64_t grain;
  std::atomic<int> badChunks{0};

  static void task(void *ctx, int64_t begin, int64_t end) {
    auto *c = static_cast<Coverage *>(ctx);
    if (begin < 0 || end > static_cast<int64_t>(c->visits.size()) ||
        begin >= end || (c->grain > 0 && end - begin > c->grain))
      c->badChunks.fetch_add(1);
    for (int64_t i = std::max<int64_t>(begin, 0);
         i < end && i < static_cast<int64_t>(c->visits.size()); ++i)
      c->visits[i].fetch_add(1, std::memory_order_relaxed);
  }

  /// Indices not visited exactly once (empty when all is well).
  std::vector<int64_t> wrong() const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < visits.size(); ++i)
      if (visits[i].load() != 1)
        out.push_back(static_cast<int64_t>(i));
    return out;
  }
};

void addRange(void *ctx, int64_t begin, int64_t end) {
  auto *sum = static_cast<std::atomic<int64_t> *>(ctx);
  int64_t local = 0;
  for (int64_t i = begin; i < end; ++i)
    local += i;
  sum->fetch_add(local, std::memory_order_relaxed);
}

TEST(ThreadPoolTest, VisitsEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    for (int64_t n : {0, 1, 2, 3, 7, 64, 1000, 4097})
      for (int64_t grain : {0, 1, 3, 16, 1000, 5000}) {
        Coverage c(n, grain);
        pool.parallelFor(n, grain, &Coverage::task, &c);
        EXPECT_EQ(c.badChunks.load(), 0)
            << "threads " << threads << ", n " << n << ", grain " << grain;
        EXPECT_TRUE(c.wrong().empty())
            << "threads " << threads << ", n " << n << ", grain " << grain
            << ": " << c.wrong().size() << " indices not visited once, first "
            << c.wrong().front();
      }
  }
}

TEST(ThreadPoolTest, ZeroItemsCallsNothing) {
  ThreadPool pool(3);
  std::atomic<int> calls{0};
  pool.parallelFor(
      0, 4,
      [](void *ctx, int64_t, int64_t) {
        static_cast<std::atomic<int> *>(ctx)->fetch_add(1);
      },
      &calls);
  EXPECT_EQ(calls.load(), 0);
}

TEST(ThreadPoolTest, DefaultIsOneThreadPerCpu) {
  ThreadPool pool(0);
  EXPECT_GE(pool.threads(), 1);
}

/// Two chunks that each wait until the other has started can only finish
/// when two threads run them at once: the workers really take part.
TEST(ThreadPoolTest, ChunksRunConcurrently) {
  struct Rendezvous {
    std::atomic<int> started{0};
    std::atomic<bool> timedOut{false};
  } r;
  ThreadPool pool(2);
  pool.parallelFor(
      2, 1,
      [](void *ctx, int64_t, int64_t) {
        auto *r = static_cast<Rendezvous *>(ctx);
        r->started.fetch_add(1);
        auto deadline =
            std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (r->started.load() < 2)
          if (std::chrono::steady_clock::now() > deadline) {
            r->timedOut = true;
            return;
          }
      },
      &r);
  EXPECT_FALSE(r.timedOut.load()) << "the second chunk never started while "
                                     "the first was running";
}

TEST(ThreadPoolTest, BackToBackCallsFinish) {
  constexpr int kCalls = 10000;
  for (int threads : {1, 2, 4}) {
    ThreadPool pool(threads);
    std::atomic<int64_t> sum{0};
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i)
      pool.parallelFor(8, 1, addRange, &sum);
    double micros = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    EXPECT_EQ(sum.load(), int64_t(kCalls) * 28);
    std::printf("[ThreadPool] %d threads: %.2f us per parallelFor(8 items)\n",
                threads, micros / kCalls);

    // Empty work: the pool's own cost per call.
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i)
      pool.parallelFor(threads, 1, [](void *, int64_t, int64_t) {}, nullptr);
    micros = std::chrono::duration<double, std::micro>(
                 std::chrono::steady_clock::now() - start)
                 .count();
    std::printf("[ThreadPool] %d threads: %.2f us per empty parallelFor\n",
                threads, micros / kCalls);
  }
}

/// Calls separated by pauses longer than the spin: workers sleep between
/// them and must be woken (or left behind) without losing work.
TEST(ThreadPoolTest, CallsAfterWorkersSleep) {
  ThreadPool pool(3);
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    Coverage c(100, 7);
    pool.parallelFor(100, 7, &Coverage::task, &c);
    ASSERT_TRUE(c.wrong().empty()) << "call " << i;
  }
}

/// Four pools of three threads each, driven at once from four threads: 16
/// threads on a machine that may have two cores.
TEST(ThreadPoolTest, OversubscribedPoolsComplete) {
  constexpr int kPools = 4, kCalls = 2000;
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int p = 0; p < kPools; ++p)
    pools.push_back(std::make_unique<ThreadPool>(3));
  std::vector<std::atomic<int64_t>> sums(kPools);
  std::vector<std::thread> drivers;
  auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < kPools; ++p)
    drivers.emplace_back([&, p] {
      for (int i = 0; i < kCalls; ++i)
        pools[p]->parallelFor(30, 2, addRange, &sums[p]);
    });
  for (std::thread &d : drivers)
    d.join();
  double micros = std::chrono::duration<double, std::micro>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  for (int p = 0; p < kPools; ++p)
    EXPECT_EQ(sums[p].load(), int64_t(kCalls) * 435) << "pool " << p;
  std::printf("[ThreadPool] oversubscribed: %.2f us per call (4 pools x 3 "
              "threads, %u CPUs)\n",
              micros / kCalls, std::thread::hardware_concurrency());
}

/// Two threads calling one pool: the calls are serialized, none is lost.
TEST(ThreadPoolTest, ConcurrentCallersShareOnePool) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  auto drive = [&] {
    for (int i = 0; i < 1000; ++i)
      pool.parallelFor(10, 1, addRange, &sum);
  };
  std::thread a(drive), b(drive);
  a.join();
  b.join();
  EXPECT_EQ(sum.load(), 2000 * 45);
}

/// A parallelFor inside a task runs serially on that thread.
TEST(ThreadPoolTest, NestedCallRunsSerially) {
  struct Outer {
    ThreadPool *pool;
    std::vector<std::atomic<int>> visits = std::vector<std::atomic<int>>(64);
    std::atomic<int> foreignThreads{0};
  } outer;
  ThreadPool pool(3);
  outer.pool = &pool;
  pool.parallelFor(
      8, 1,
      [](void *ctx, int64_t begin, int64_t) {
        auto *o = static_cast<Outer *>(ctx);
        struct Inner {
          Outer *o;
          int64_t row;
          std::thread::id id = std::this_thread::get_id();
        } inner{o, begin};
        o->pool->parallelFor(
            8, 2,
            [](void *ctx, int64_t b, int64_t e) {
              auto *in = static_cast<Inner *>(ctx);
              if (std::this_thread::get_id() != in->id)
                in->o->foreignThreads.fetch_add(1);
              for (int64_t i = b; i < e; ++i)
                in->o->visits[in->row * 8 + i].fetch_add(1);
            },
            &inner);
      },
      &outer);
  for (size_t i = 0; i < outer.visits.size(); ++i)
    EXPECT_EQ(outer.visits[i].load(), 1) << "index " << i;
  EXPECT_EQ(outer.foreignThreads.load(), 0);
}

TEST(ThreadPoolTest, DestroysIdlePools) {
  // Never used, used once and left to fall asleep, and used just before.
  {
    ThreadPool pool(4);
  }
  {
    ThreadPool pool(4);
    std::atomic<int64_t> sum{0};
    pool.parallelFor(100, 3, addRange, &sum);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(sum.load(), 4950);
  }
  {
    ThreadPool pool(4);
    std::atomic<int64_t> sum{0};
    pool.parallelFor(100, 3, addRange, &sum);
    EXPECT_EQ(sum.load(), 4950);
  }
}

TEST(ThreadPoolTest, AbiCallsThePool) {
  ThreadPool pool(3);
  kiln_parallel parallel = pool.abi();
  EXPECT_EQ(parallel.pool, &pool);
  EXPECT_EQ(parallel.threads, 3);
  Coverage c(1000, 10);
  parallel.parallel_for(parallel.pool, 1000, 10, &Coverage::task, &c);
  EXPECT_EQ(c.badChunks.load(), 0);
  EXPECT_TRUE(c.wrong().empty());
}

} // namespace
