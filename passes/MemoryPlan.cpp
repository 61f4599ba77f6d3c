//===- MemoryPlan.cpp - Activation buffers of a step ----------------------===//
//
// Part of Kiln. Sizes, live ranges and placement of a step's activation
// buffers; docs/passes/memory-planning.md states the rules and why.
//
//===----------------------------------------------------------------------===//

#include "passes/MemoryPlan.h"

#include "ir/KilnOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace kiln;

namespace {

/// The extent of one dimension when the step has T tokens:
/// `perToken * T + fixed`.
struct Extent {
  int64_t perToken = 0;
  int64_t fixed = 0;
};

/// The extents of a tensor's dimensions, where known.
using Shape = SmallVector<std::optional<Extent>>;

/// Extents of the step's values, filled in program order: a result's dynamic
/// dimensions come from its operands through the semantics of its op.
class ShapeTracker {
public:
  explicit ShapeTracker(std::optional<int64_t> contextLength)
      : contextLength(contextLength) {}

  /// A step's tensor arguments are [T] (tokens, positions, sequence ids) or
  /// [R] (logit rows); the step contract makes R <= T (strictly increasing
  /// indices into the step's tokens), so both are bounded by T.
  void setArgument(BlockArgument arg, RankedTensorType type) {
    Shape &shape = shapes[arg];
    for (int64_t d : type.getShape())
      shape.push_back(ShapedType::isDynamic(d) ? Extent{1, 0} : Extent{0, d});
  }

  /// The extents of `result`, recorded for its users; emits an error at its
  /// op and fails when a dynamic dimension cannot be bounded.
  FailureOr<SmallVector<Extent>> infer(OpResult result);

private:
  Shape get(Value value) const;
  Shape guess(OpResult result) const;

  std::optional<int64_t> contextLength;
  DenseMap<Value, Shape> shapes;
};

} // namespace

/// Extents of an activation as recorded, of any other ranked tensor (weights)
/// from its static shape; empty when unknown.
Shape ShapeTracker::get(Value value) const {
  if (auto it = shapes.find(value); it != shapes.end())
    return it->second;
  Shape shape;
  if (auto type = dyn_cast<RankedTensorType>(value.getType()))
    for (int64_t d : type.getShape())
      shape.push_back(ShapedType::isDynamic(d) ? std::optional<Extent>()
                                               : Extent{0, d});
  return shape;
}

/// The extents the semantics of `result`'s op give each of its dimensions,
/// where known. Only dynamic dimensions of the result type are taken from
/// here; static ones are what the type says.
Shape ShapeTracker::guess(OpResult result) const {
  Operation *op = result.getOwner();
  int64_t rank = cast<RankedTensorType>(result.getType()).getRank();
  Shape g(rank);
  auto dim = [&](Value value, int64_t i) -> std::optional<Extent> {
    Shape shape = get(value);
    return i < static_cast<int64_t>(shape.size()) ? shape[i] : std::nullopt;
  };
  auto copyFrom = [&](Value value) {
    for (int64_t i = 0; i < rank; ++i)
      g[i] = dim(value, i);
  };
  llvm::TypeSwitch<Operation *>(op)
      // [T] ids -> [T, D]
      .Case([&](EmbeddingOp o) { g[0] = dim(o.getIds(), 0); })
      // [T, ...] input, [R] rows -> [R, ...]
      .Case([&](GatherRowsOp o) {
        copyFrom(o.getInput());
        g[0] = dim(o.getRows(), 0);
      })
      // -> [T, S, Hkv, d]: a token attends over at most the context length.
      .Case([&](KVReadOp o) {
        g[0] = dim(o.getPositions(), 0);
        if (contextLength && rank > 1)
          g[1] = Extent{0, *contextLength};
      })
      // [T, H, d] query, [T, S, Hkv, d] keys -> [T, H, S]
      .Case([&](AttentionScoresOp o) {
        g[0] = dim(o.getQuery(), 0);
        if (rank > 2)
          g[2] = dim(o.getKeys(), 1);
      })
      // [T, H, S] probs -> [T, H, d]
      .Case([&](AttentionOutputOp o) { g[0] = dim(o.getProbs(), 0); })
      .Case([&](TransposeOp o) {
        for (auto [j, p] : llvm::enumerate(o.getPermutation()))
          g[j] = dim(o.getInput(), p);
      })
      // The verifier keeps the number of dynamic dimensions: the k-th
      // dynamic dimension of the result is the k-th of the input.
      .Case([&](ReshapeOp o) {
        ArrayRef<int64_t> in = o.getInput().getType().getShape();
        ArrayRef<int64_t> out = o.getType().getShape();
        for (size_t i = 0, j = 0; i < out.size(); ++i) {
          if (!ShapedType::isDynamic(out[i]))
            continue;
          while (j < in.size() && !ShapedType::isDynamic(in[j]))
            ++j;
          if (j < in.size())
            g[i] = dim(o.getInput(), j++);
        }
      })
      // Along the axis, the inputs' extents add up.
      .Case([&](ConcatOp o) {
        copyFrom(o.getInputs().front());
        int64_t axis = o.getAxis();
        if (axis < 0 || axis >= rank)
          return;
        Extent sum;
        for (Value input : o.getInputs()) {
          std::optional<Extent> e = dim(input, axis);
          if (!e) {
            g[axis] = std::nullopt;
            return;
          }
          sum.perToken += e->perToken;
          sum.fixed += e->fixed;
        }
        g[axis] = sum;
      })
      // Every other op keeps the dimensions of its first activation operand
      // in place: element-wise ops, norms, rope, softmax, the mask, matmuls
      // (only [T, K] -> [T, N]'s T is dynamic), swiglu, attention (its
      // query), and split (a slice is no longer than the whole).
      .Default([&](Operation *) {
        for (Value operand : op->getOperands())
          if (shapes.count(operand)) {
            if (cast<RankedTensorType>(operand.getType()).getRank() == rank)
              copyFrom(operand);
            return;
          }
      });
  return g;
}

FailureOr<SmallVector<Extent>> ShapeTracker::infer(OpResult result) {
  auto type = cast<RankedTensorType>(result.getType());
  Shape g = guess(result);
  SmallVector<Extent> extents;
  for (auto [i, d] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(d)) {
      extents.push_back({0, d});
      continue;
    }
    if (g[i]) {
      extents.push_back(*g[i]);
      continue;
    }
    Operation *op = result.getOwner();
    if (isa<KVReadOp>(op))
      return op->emitError()
             << "dynamic dimension " << i << " of result #"
             << result.getResultNumber()
             << " counts cached positions, and the step function has no "
                "kiln.context_length to bound it (or pass context-length=N "
                "to kiln-plan-memory)";
    return op->emitError()
           << "cannot bound dynamic dimension " << i << " of result #"
           << result.getResultNumber() << " (" << type
           << "): the memory plan knows the step's token count T, its "
              "logit-row count R and cached-position counts S, and this is "
              "none of them";
  }
  Shape &recorded = shapes[result];
  recorded.assign(extents.begin(), extents.end());
  return extents;
}

/// Bytes of one element of `type`: ints and floats are byte-aligned here
/// (activations are f32, f16 or bf16).
static std::optional<int64_t> elementBytes(Type type) {
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return std::nullopt;
}

/// The size of `result` with dimension extents `extents`. A size affine in T
/// has at most one dimension that grows with T: [T, H, S] does (S is bounded
/// by the context length, not by T), a [T, T] tensor would not.
static FailureOr<BufferSize> sizeOf(OpResult result, ArrayRef<Extent> extents) {
  auto type = cast<RankedTensorType>(result.getType());
  Operation *op = result.getOwner();
  std::optional<int64_t> bytes = elementBytes(type.getElementType());
  if (!bytes)
    return op->emitError() << "result #" << result.getResultNumber()
                           << " has element type " << type.getElementType()
                           << ", which has no size in bytes";
  const Extent *growing = nullptr;
  int64_t rest = *bytes;
  for (const Extent &e : extents) {
    if (e.perToken == 0) {
      rest *= e.fixed;
      continue;
    }
    if (growing)
      return op->emitError()
             << "result #" << result.getResultNumber() << " (" << type
             << ") has two dimensions that grow with the token count, so its "
                "size is not affine in T";
    growing = &e;
  }
  if (!growing)
    return BufferSize{0, rest};
  return BufferSize{growing->perToken * rest, growing->fixed * rest};
}

FailureOr<StepBuffers>
kiln::analyzeStepBuffers(func::FuncOp step,
                         std::optional<int64_t> contextLength) {
  if (step.isExternal() || !step.getBody().hasOneBlock())
    return step.emitError()
           << "the memory plan needs a step function with a body of one "
              "block, in program order";
  StepBuffers plan;
  ShapeTracker shapes(contextLength);
  // Values computed from the step's arguments: the rest (weights, weights
  // packed by kiln.concat) do not change from step to step and are not
  // activations.
  DenseSet<Value> perStep;
  for (BlockArgument arg : step.getArguments()) {
    perStep.insert(arg);
    if (auto type = dyn_cast<RankedTensorType>(arg.getType()))
      shapes.setArgument(arg, type);
  }

  unsigned index = 0;
  for (Operation &op : step.getBody().front()) {
    unsigned i = index++;
    if (op.getNumRegions() != 0)
      return op.emitError() << "the memory plan linearizes a step's ops in "
                               "program order and cannot plan an op with "
                               "regions";
    // Uses first: an op reads its operands while it writes its results. A
    // use by the terminator keeps a step output live to the end.
    for (Value operand : op.getOperands())
      if (auto it = plan.bufferOf.find(operand); it != plan.bufferOf.end()) {
        StepBuffer &buffer = plan.buffers[it->second];
        buffer.lastOp = std::max(buffer.lastOp, i);
      }
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return perStep.contains(v); }))
      continue;
    for (OpResult result : op.getResults()) {
      perStep.insert(result);
      // The KV cache is persistent state the runtime owns (kv_append
      // updates it in place), and scalars live in registers.
      if (!isa<TensorType>(result.getType()))
        continue;
      if (!isa<RankedTensorType>(result.getType()))
        return op.emitError()
               << "result #" << result.getResultNumber()
               << " is an unranked tensor; the memory plan sizes "
                  "activations from their ranked types";
      FailureOr<SmallVector<Extent>> extents = shapes.infer(result);
      if (failed(extents))
        return failure();
      // A reshape reinterprets row-major elements: it is its input's
      // storage under another type.
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        if (auto it = plan.bufferOf.find(reshape.getInput());
            it != plan.bufferOf.end()) {
          plan.bufferOf[result] = it->second;
          plan.views[result] = reshape.getInputMutable().getOperandNumber();
          continue;
        }
      }
      FailureOr<BufferSize> size = sizeOf(result, *extents);
      if (failed(size))
        return failure();
      plan.bufferOf[result] = plan.buffers.size();
      plan.buffers.push_back({result, i, i, *size});
    }
  }
  plan.numOps = index;
  return plan;
}

// Greedy placement, largest first: each buffer goes at the lowest aligned
// offset where it overlaps no already placed buffer that is live at the same
// time. Ties in size go in definition order, and nothing depends on pointer
// values or hash order, so the same IR always gets the same plan.
int64_t kiln::placeBuffers(MutableArrayRef<StepBuffer> buffers,
                           int64_t maxTokens) {
  SmallVector<unsigned> order =
      llvm::to_vector(llvm::seq<unsigned>(0, buffers.size()));
  llvm::sort(order, [&](unsigned a, unsigned b) {
    int64_t sizeA = buffers[a].size.paddedAt(maxTokens);
    int64_t sizeB = buffers[b].size.paddedAt(maxTokens);
    return sizeA != sizeB ? sizeA > sizeB : a < b;
  });
  SmallVector<unsigned> placed;
  for (unsigned b : order) {
    StepBuffer &buffer = buffers[b];
    int64_t bytes = buffer.size.paddedAt(maxTokens);
    SmallVector<unsigned> conflicts;
    for (unsigned p : placed)
      if (buffers[p].liveWith(buffer))
        conflicts.push_back(p);
    llvm::sort(conflicts, [&](unsigned x, unsigned y) {
      return std::make_pair(buffers[x].offset, x) <
             std::make_pair(buffers[y].offset, y);
    });
    // First fit: the gaps between conflicting buffers, lowest first.
    int64_t offset = 0;
    for (unsigned c : conflicts) {
      if (offset + bytes <= buffers[c].offset)
        break;
      offset = std::max(offset, buffers[c].offset +
                                    buffers[c].size.paddedAt(maxTokens));
    }
    buffer.offset = offset;
    placed.push_back(b);
  }
  return arenaBytes(buffers, maxTokens);
}

int64_t kiln::arenaBytes(ArrayRef<StepBuffer> buffers, int64_t tokens) {
  int64_t end = 0;
  for (const StepBuffer &b : buffers)
    end = std::max(end, b.offset + b.size.paddedAt(tokens));
  return end;
}

int64_t kiln::naiveBytes(ArrayRef<StepBuffer> buffers, int64_t tokens) {
  int64_t sum = 0;
  for (const StepBuffer &b : buffers)
    sum += b.size.paddedAt(tokens);
  return sum;
}

int64_t kiln::liveBytesBound(ArrayRef<StepBuffer> buffers, int64_t tokens) {
  unsigned numOps = 0;
  for (const StepBuffer &b : buffers)
    numOps = std::max(numOps, b.lastOp + 1);
  // Bytes that become live at each op, minus those that die just before.
  SmallVector<int64_t> delta(numOps + 1, 0);
  for (const StepBuffer &b : buffers) {
    delta[b.firstOp] += b.size.paddedAt(tokens);
    delta[b.lastOp + 1] -= b.size.paddedAt(tokens);
  }
  int64_t live = 0, most = 0;
  for (int64_t d : delta)
    most = std::max(most, live += d);
  return most;
}
