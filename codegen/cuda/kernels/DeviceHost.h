//===- DeviceHost.h - Device.cuh on the CPU: a block emulator ----*- C++
//-*-===//
//
// Part of Kiln's CUDA kernel library: the host implementation of Device.cuh,
// included by it when no CUDA compiler is compiling. It runs a kernel's
// source on the CPU, one thread block at a time, blocks in a random order,
// each GPU thread a fiber with its own stack (switched by a few lines of
// x86-64 assembly below: ucontext's swapcontext makes a system call per
// switch, which made whole-model emulation 50 times slower):
//
//  - a fiber runs until it reaches a block barrier (sync_block), a warp
//    operation (shfl*, ballot, mma_16x8x16) or its end, then the scheduler
//    picks the next fiber at random among those that can run. So the
//    threads of a block interleave in random orders between barriers, and a
//    kernel that reads shared memory another thread writes without a
//    barrier between them gets different results from run to run;
//  - a warp operation completes when all 32 lanes of the warp have reached
//    it: the scheduler then computes every lane's result from every lane's
//    operand, as the hardware would;
//  - shared arrays start as all-ones bytes (NaN as f32, f16 and bf16), so a
//    read of an element no thread wrote shows in the result;
//  - a 16-byte load from an address that is not 16-byte aligned, a barrier
//    reached while other threads of the block have exited, a warp operation
//    that some lanes of the warp skip, and a block that can make no
//    progress are errors naming what happened (std::runtime_error from
//    launch).
//
// What it cannot show: timing, occupancy and bank conflicts; the memory
// model's corner cases (a fiber's writes are visible to the next fiber at
// once, where a GPU needs a barrier or a fence: a missing __threadfence is
// not caught); races between blocks, which run one after another; and the
// tensor cores' own rounding (the emulated mma sums exact products in
// double and rounds once). Global memory is the host's: kernels read and
// write host pointers.
//
// The emulator is single-threaded: one launch at a time per OS thread.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CUDA_DEVICE_HOST_H
#define KILN_CUDA_DEVICE_HOST_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(__x86_64__) || !defined(__linux__)
#error "the CUDA block emulator switches fibers on x86-64 Linux"
#endif

// kiln_emulator_switch(from, to): saves the callee-saved registers on the
// current stack and its stack pointer in *from, then continues on the stack
// `to` (saved the same way, or prepared by Emulator::startFiber), popping
// its registers and returning into it. Weak: every file that includes this
// header defines it, and the linker keeps one.
extern "C" void kiln_emulator_switch(void **from, void *to);
asm(R"(
  .pushsection .text
  .weak kiln_emulator_switch
  .type kiln_emulator_switch, @function
kiln_emulator_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size kiln_emulator_switch, .-kiln_emulator_switch
  .popsection
)");

#define KILN_DEVICE inline
#define KILN_UNROLL
#define KILN_CONSTANT static const
#define KILN_KERNEL(threads) inline void
#define KILN_SHARED(T, name, n)                                                \
  T *name = ::kiln::cuda::host::sharedArray<T>(n, #name)
/// Makes a kernel launchable by name (host::launchByName), as the driver
/// finds a module's kernels: for runners that treat the emulator as a
/// device.
#define KILN_REGISTER_KERNEL(name)                                             \
  [[maybe_unused]] static const bool kiln_registered_##name =                  \
      ::kiln::cuda::host::registerKernel(#name, name)

namespace kiln::cuda::host {

struct Dim3 {
  int x = 1, y = 1, z = 1;
};

/// How a launch runs: the seed of its random orders and each fiber's stack.
struct LaunchOptions {
  uint64_t seed = 1;
  size_t stackBytes = 128 * 1024;
};

/// The state of one emulated launch. Kernels reach it through `current()`.
class Emulator {
public:
  enum class State { Ready, AtBarrier, AtWarpOp, Done };

  /// What a lane waits with at a warp operation: its operand and where its
  /// result goes (both on its own stack, which stays put while it waits),
  /// and the function that computes all 32 results from all 32 operands.
  using WarpOpFn = void (*)(const void *const *in, void *const *out);
  struct Thread {
    void *stackPointer = nullptr; ///< while switched out
    State state = State::Ready;
    size_t sharedCursor = 0;
    const char *opName = nullptr;
    WarpOpFn op = nullptr;
    const void *in = nullptr;
    void *out = nullptr;
  };

  Emulator(Dim3 grid, int threads, LaunchOptions options)
      : grid(grid), threads(threads), options(options), rng(options.seed) {}

  void run(const std::function<void()> &kernel);

  // The running thread's view.
  int threadIndex() const { return running; }
  Dim3 blockIndex() const { return block; }
  Dim3 gridSize() const { return grid; }
  int blockSize() const { return threads; }
  void barrier();
  void warpOp(const char *name, WarpOpFn op, const void *in, void *out);
  void *shared(size_t bytes, const char *name);
  [[noreturn]] void fail(const std::string &what);

private:
  struct SharedArray {
    std::unique_ptr<unsigned char[]> bytes;
    size_t size;
    std::string name;
  };

  void runBlock();
  void startFiber(int lane);
  void yieldToScheduler();
  void arrived(int lane);
  void makeReady(int lane);
  std::string where() const;
  [[noreturn]] static void threadEntry();

  Dim3 grid, block;
  int threads;
  LaunchOptions options;
  std::mt19937_64 rng;
  const std::function<void()> *kernel = nullptr;
  std::vector<Thread> lanes;
  std::vector<std::unique_ptr<unsigned char[]>> *stacks = nullptr;
  std::vector<SharedArray> sharedArrays;
  void *scheduler = nullptr; ///< the scheduler's stack while a fiber runs
  std::vector<int> ready;    ///< lanes that can run
  std::vector<int> warpWaiting, warpDone;
  int atBarrier = 0, done = 0;
  int running = -1;
  std::string error;
};

inline Emulator *&currentSlot() {
  static thread_local Emulator *current = nullptr;
  return current;
}
inline Emulator &current() { return *currentSlot(); }

/// Runs `kernel` (a call of a KILN_KERNEL function) on a grid of blocks of
/// `threads` threads. Throws std::runtime_error naming what went wrong.
inline void launch(Dim3 grid, int threads, const std::function<void()> &kernel,
                   LaunchOptions options = {}) {
  if (threads <= 0 || threads % 32 != 0 || threads > 1024)
    throw std::runtime_error("launch: " + std::to_string(threads) +
                             " threads per block; Kiln's kernels use a "
                             "multiple of 32 up to 1024");
  if (grid.x <= 0 || grid.y <= 0 || grid.z <= 0)
    throw std::runtime_error("launch: empty grid");
  Emulator emulator(grid, threads, options);
  emulator.run(kernel);
}

/// A kernel as the driver sees one: called with a pointer to each
/// parameter's value (cuLaunchKernel's kernelParams), whose sizes it knows.
struct RegisteredKernel {
  std::function<void(void **)> call;
  std::vector<size_t> paramSizes;
};

inline std::map<std::string, RegisteredKernel> &kernelRegistry() {
  static std::map<std::string, RegisteredKernel> registry;
  return registry;
}

template <class... A, size_t... I>
void callWithParams(void (*kernel)(A...), void **params,
                    std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_reference_t<A> *>(params[I])...);
}

template <class... A> bool registerKernel(const char *name, void (*k)(A...)) {
  kernelRegistry()[name] = {[k](void **params) {
                              callWithParams(k, params,
                                             std::index_sequence_for<A...>{});
                            },
                            {sizeof(A)...}};
  return true;
}

/// Launches the registered kernel `name` with cuLaunchKernel's arguments:
/// `params[i]` points to parameter i's value, of `sizes[i]` bytes (checked
/// against the kernel's signature).
inline void launchByName(const std::string &name, Dim3 grid, int threads,
                         void **params, const std::vector<size_t> &sizes,
                         LaunchOptions options = {}) {
  auto it = kernelRegistry().find(name);
  if (it == kernelRegistry().end())
    throw std::runtime_error("no kernel named '" + name + "'");
  if (it->second.paramSizes != sizes)
    throw std::runtime_error("kernel '" + name + "' takes " +
                             std::to_string(it->second.paramSizes.size()) +
                             " parameters of other sizes than the " +
                             std::to_string(sizes.size()) + " passed");
  launch(grid, threads, [&] { it->second.call(params); }, options);
}

template <class T> T *sharedArray(size_t n, const char *name) {
  return static_cast<T *>(current().shared(n * sizeof(T), name));
}

//===--- The emulator
//------------------------------------------------------===//

inline void Emulator::run(const std::function<void()> &k) {
  Emulator *saved = currentSlot();
  currentSlot() = this;
  kernel = &k;
  lanes.resize(threads);
  // Fiber stacks outlive the launch: a step launches a hundred kernels, and
  // fresh stacks for each cost a system call apiece.
  static thread_local std::vector<std::unique_ptr<unsigned char[]>> pool;
  static thread_local size_t pooledBytes = 0;
  if (pooledBytes != options.stackBytes) {
    pool.clear();
    pooledBytes = options.stackBytes;
  }
  while (pool.size() < size_t(threads))
    pool.emplace_back(new unsigned char[options.stackBytes]);
  stacks = &pool;
  std::vector<Dim3> order;
  for (int z = 0; z < grid.z; ++z)
    for (int y = 0; y < grid.y; ++y)
      for (int x = 0; x < grid.x; ++x)
        order.push_back({x, y, z});
  std::shuffle(order.begin(), order.end(), rng);
  try {
    for (Dim3 b : order) {
      block = b;
      runBlock();
    }
  } catch (...) {
    currentSlot() = saved;
    throw;
  }
  currentSlot() = saved;
}

inline void Emulator::threadEntry() {
  Emulator &e = current();
  (*e.kernel)();
  e.lanes[e.running].state = State::Done;
  e.yieldToScheduler();
  __builtin_unreachable(); // a finished fiber is never resumed
}

/// Prepares lane's stack so that switching to it enters threadEntry as if
/// called: the saved registers (zero), MXCSR and the x87 control word as
/// the scheduler's, then threadEntry's address for `ret`, over a fake
/// return address (so rsp is 8 mod 16 at entry, as after a call).
inline void Emulator::startFiber(int lane) {
  auto top =
      reinterpret_cast<uintptr_t>((*stacks)[lane].get()) + options.stackBytes;
  auto *sp = reinterpret_cast<uint64_t *>(top & ~uintptr_t(15));
  *--sp = 0;                                                  // fake return
  *--sp = reinterpret_cast<uint64_t>(&Emulator::threadEntry); // ret target
  for (int i = 0; i < 6; ++i)
    *--sp = 0; // rbp, rbx, r12-r15
  uint32_t control[2];
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(control[0]), "=m"(control[1]));
  *--sp = uint64_t(control[0]) | uint64_t(control[1] & 0xffff) << 32;
  lanes[lane].stackPointer = sp;
}

inline void Emulator::makeReady(int lane) {
  lanes[lane].state = State::Ready;
  ready.push_back(lane);
}

inline void Emulator::runBlock() {
  sharedArrays.clear();
  int warps = threads / 32;
  warpWaiting.assign(warps, 0);
  warpDone.assign(warps, 0);
  atBarrier = done = 0;
  ready.clear();
  for (int i = 0; i < threads; ++i) {
    lanes[i] = Thread();
    startFiber(i);
    ready.push_back(i);
  }
  while (done < threads) {
    if (ready.empty()) {
      running = -1;
      throw std::runtime_error(
          where() + ": no thread can go on: " + std::to_string(done) +
          " threads exited, " + std::to_string(atBarrier) +
          " wait at a block barrier, the rest at warp operations that not "
          "every lane of their warp reaches (a barrier or warp operation "
          "skipped by some threads)");
    }
    size_t pick =
        std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    running = ready[pick];
    ready[pick] = ready.back();
    ready.pop_back();
    kiln_emulator_switch(&scheduler, lanes[running].stackPointer);
    if (!error.empty())
      throw std::runtime_error(error);
    arrived(running);
  }
}

/// Accounts for where `lane` stopped, and releases what it completes: a
/// warp operation all 32 lanes reached, or the block barrier. A warp whose
/// lanes wait at different operations, or some at an operation while
/// others exited, is diverged; a barrier that exited threads never reach
/// is an error too.
inline void Emulator::arrived(int lane) {
  Thread &t = lanes[lane];
  int w = lane / 32;
  switch (t.state) {
  case State::Ready:
    return; // not reached: a fiber stops at an operation or its end
  case State::Done:
    ++done;
    ++warpDone[w];
    break;
  case State::AtBarrier:
    ++atBarrier;
    break;
  case State::AtWarpOp:
    ++warpWaiting[w];
    break;
  }
  Thread *warp = &lanes[w * 32];
  if (warpWaiting[w] > 0 && warpWaiting[w] + warpDone[w] == 32) {
    for (int l = 0; l < 32; ++l)
      if (warp[l].state != State::AtWarpOp || warp[l].op != warp[0].op) {
        int first = 0;
        while (warp[first].state != State::AtWarpOp)
          ++first;
        running = w * 32 + l;
        throw std::runtime_error(
            where() + ": warp " + std::to_string(w) + " diverged: lane " +
            std::to_string(first) + " waits at " + warp[first].opName +
            " while lane " + std::to_string(l) + " " +
            (warp[l].state == State::Done
                 ? "has exited"
                 : std::string("waits at ") + warp[l].opName));
      }
    const void *in[32];
    void *out[32];
    for (int l = 0; l < 32; ++l) {
      in[l] = warp[l].in;
      out[l] = warp[l].out;
    }
    warp[0].op(in, out);
    warpWaiting[w] = 0;
    for (int l = 0; l < 32; ++l)
      makeReady(w * 32 + l);
  }
  if (atBarrier > 0 && atBarrier + done == threads) {
    if (done > 0) {
      running = lane;
      throw std::runtime_error(
          where() + ": no thread can go on: " + std::to_string(done) +
          " threads exited, " + std::to_string(atBarrier) +
          " wait at a block barrier they skipped");
    }
    atBarrier = 0;
    for (int i = 0; i < threads; ++i)
      makeReady(i);
  }
}

inline void Emulator::yieldToScheduler() {
  kiln_emulator_switch(&lanes[running].stackPointer, scheduler);
}

inline void Emulator::barrier() {
  lanes[running].state = State::AtBarrier;
  yieldToScheduler();
}

inline void Emulator::warpOp(const char *name, WarpOpFn op, const void *in,
                             void *out) {
  Thread &t = lanes[running];
  t.state = State::AtWarpOp;
  t.opName = name;
  t.op = op;
  t.in = in;
  t.out = out;
  yieldToScheduler();
}

inline void *Emulator::shared(size_t bytes, const char *name) {
  Thread &t = lanes[running];
  if (t.sharedCursor == sharedArrays.size()) {
    // new[] of bytes is 16-byte aligned on x86-64 Linux (malloc's).
    SharedArray a{std::unique_ptr<unsigned char[]>(new unsigned char[bytes]),
                  bytes, name};
    std::memset(a.bytes.get(), 0xff, bytes);
    sharedArrays.push_back(std::move(a));
  }
  SharedArray &a = sharedArrays[t.sharedCursor++];
  if (a.size != bytes || a.name != name)
    fail("shared array '" + std::string(name) +
         "' declared where another "
         "thread of the block declared '" +
         a.name +
         "': every thread must declare the same shared arrays in order");
  return a.bytes.get();
}

inline void Emulator::fail(const std::string &what) {
  error = where() + ": " + what;
  lanes[running].state = State::Done;
  yieldToScheduler();
  std::abort(); // never resumed
}

inline std::string Emulator::where() const {
  std::string s = "block (" + std::to_string(block.x) + "," +
                  std::to_string(block.y) + "," + std::to_string(block.z) + ")";
  if (running >= 0)
    s += " thread " + std::to_string(running);
  return s;
}

//===--- Warp operations
//---------------------------------------------------===//

template <class T> struct ShuffleIn {
  T value;
  int lane; // the source lane, or the xor mask
};

template <class T, bool Xor>
void shuffleOp(const void *const *in, void *const *out) {
  for (int l = 0; l < 32; ++l) {
    const auto *mine = static_cast<const ShuffleIn<T> *>(in[l]);
    int src = Xor ? (l ^ mine->lane) : (mine->lane & 31);
    *static_cast<T *>(out[l]) =
        static_cast<const ShuffleIn<T> *>(in[src])->value;
  }
}

inline void ballotOp(const void *const *in, void *const *out) {
  uint32_t mask = 0;
  for (int l = 0; l < 32; ++l)
    mask |= uint32_t(*static_cast<const bool *>(in[l])) << l;
  for (int l = 0; l < 32; ++l)
    *static_cast<uint32_t *>(out[l]) = mask;
}

inline float decodeHalf(uint16_t bits, bool isBf16);

/// One lane's operands of an mma.
struct MmaOperands {
  const MmaA *a;
  const MmaB *b;
  const MmaC *c;
};

/// D = A * B + C over the warp: each lane's registers placed in the 16x16,
/// 16x8 and 16x8 matrices by the PTX ISA's tables for mma.m16n8k16,
/// written out here by register rather than by the load helpers' formulas.
template <bool IsBf16> void mmaOp(const void *const *in, void *const *out);

} // namespace kiln::cuda::host

namespace kiln::cuda {

KILN_DEVICE int thread_index() { return host::current().threadIndex(); }
KILN_DEVICE int block_size() { return host::current().blockSize(); }
KILN_DEVICE int block_x() { return host::current().blockIndex().x; }
KILN_DEVICE int block_y() { return host::current().blockIndex().y; }
KILN_DEVICE int block_z() { return host::current().blockIndex().z; }
KILN_DEVICE int grid_x() { return host::current().gridSize().x; }
KILN_DEVICE int grid_y() { return host::current().gridSize().y; }
KILN_DEVICE int grid_z() { return host::current().gridSize().z; }

KILN_DEVICE void sync_block() { host::current().barrier(); }

inline void noWarpOp(const void *const *, void *const *) {}
/// The warp's lanes wait for each other (and shared-memory writes of the
/// warp become visible to it, which on the host they already are).
KILN_DEVICE void sync_warp() {
  host::current().warpOp("sync_warp", &noWarpOp, nullptr, nullptr);
}

template <class T, bool Xor> T hostShuffle(T v, int lane, const char *name) {
  host::ShuffleIn<T> in{v, lane};
  T out;
  host::current().warpOp(name, &host::shuffleOp<T, Xor>, &in, &out);
  return out;
}
KILN_DEVICE float shfl_xor(float v, int laneMask) {
  return hostShuffle<float, true>(v, laneMask, "shfl_xor");
}
KILN_DEVICE int shfl_xor(int v, int laneMask) {
  return hostShuffle<int, true>(v, laneMask, "shfl_xor");
}
KILN_DEVICE float shfl(float v, int srcLane) {
  return hostShuffle<float, false>(v, srcLane, "shfl");
}
KILN_DEVICE u32 ballot(bool p) {
  u32 out;
  host::current().warpOp("ballot", &host::ballotOp, &p, &out);
  return out;
}

KILN_DEVICE Bytes16 load16(const void *p) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    host::current().fail("load16 from an address that is not 16-byte "
                         "aligned (a GPU faults)");
  Bytes16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

KILN_DEVICE float as_float(u32 bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
KILN_DEVICE float to_float(float x) { return x; }
KILN_DEVICE float to_float(f16 x) { return host::decodeHalf(x.bits, false); }
KILN_DEVICE float to_float(bf16 x) { return host::decodeHalf(x.bits, true); }
KILN_DEVICE float half_bits_to_float(u16 bits, f16) {
  return host::decodeHalf(bits, false);
}
KILN_DEVICE float half_bits_to_float(u16 bits, bf16) {
  return host::decodeHalf(bits, true);
}
KILN_DEVICE u16 to_bits(float x, f16) {
  _Float16 h = static_cast<_Float16>(x); // round to nearest even
  u16 bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}
KILN_DEVICE u16 to_bits(float x, bf16) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN stays a (quiet) NaN
    return u16((u >> 16) | 0x40);
  return u16((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

KILN_DEVICE float exp_f32(float x) { return std::exp(x); }
KILN_DEVICE float sqrt_f32(float x) { return std::sqrt(x); }
KILN_DEVICE float sin_f32(float x) { return std::sin(x); }
KILN_DEVICE float cos_f32(float x) { return std::cos(x); }
KILN_DEVICE float max_f32(float a, float b) { return std::fmax(a, b); }
KILN_DEVICE float neg_inf() { return -INFINITY; }

KILN_DEVICE void mma_16x8x16(MmaC &d, const MmaA &a, const MmaB &b, f16) {
  host::MmaOperands in{&a, &b, &d};
  MmaC out;
  host::current().warpOp("mma.m16n8k16.f16", &host::mmaOp<false>, &in, &out);
  d = out;
}
KILN_DEVICE void mma_16x8x16(MmaC &d, const MmaA &a, const MmaB &b, bf16) {
  host::MmaOperands in{&a, &b, &d};
  MmaC out;
  host::current().warpOp("mma.m16n8k16.bf16", &host::mmaOp<true>, &in, &out);
  d = out;
}

} // namespace kiln::cuda

namespace kiln::cuda::host {

inline float decodeHalf(uint16_t bits, bool isBf16) {
  if (isBf16) {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return float(h);
}

template <bool IsBf16> void mmaOp(const void *const *in, void *const *out) {
  double a[16][16], b[16][8], c[16][8];
  auto lo = [](uint32_t r) { return decodeHalf(uint16_t(r), IsBf16); };
  auto hi = [](uint32_t r) { return decodeHalf(uint16_t(r >> 16), IsBf16); };
  for (int lane = 0; lane < 32; ++lane) {
    const auto *op = static_cast<const MmaOperands *>(in[lane]);
    int g = lane >> 2, t = lane & 3;
    // A: a0..a7 are the halves of reg 0..3; rows g for a0,a1,a4,a5 and g+8
    // otherwise; columns 2t + (i & 1), plus 8 for a4..a7.
    for (int i = 0; i < 8; ++i) {
      uint32_t r = op->a->reg[i / 2];
      int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      int col = 2 * t + (i & 1) + (i >= 4 ? 8 : 0);
      a[row][col] = (i & 1) ? hi(r) : lo(r);
    }
    // B: b0..b3 are the halves of reg 0, 1; rows 2t + (i & 1), plus 8 for
    // b2, b3; column g.
    for (int i = 0; i < 4; ++i) {
      uint32_t r = op->b->reg[i / 2];
      b[2 * t + (i & 1) + (i >= 2 ? 8 : 0)][g] = (i & 1) ? hi(r) : lo(r);
    }
    // C: c0, c1 in row g, c2, c3 in row g+8; columns 2t + (i & 1).
    for (int i = 0; i < 4; ++i)
      c[g + (i >= 2 ? 8 : 0)][2 * t + (i & 1)] = op->c->reg[i];
  }
  for (int lane = 0; lane < 32; ++lane) {
    int g = lane >> 2, t = lane & 3;
    auto *d = static_cast<MmaC *>(out[lane]);
    for (int i = 0; i < 4; ++i) {
      int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
      double sum = c[row][col];
      for (int k = 0; k < 16; ++k)
        sum += a[row][k] * b[k][col];
      d->reg[i] = float(sum);
    }
  }
}

} // namespace kiln::cuda::host

#endif // KILN_CUDA_DEVICE_HOST_H
