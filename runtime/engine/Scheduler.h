//===- Scheduler.h - Continuous batching, one step at a time ----*- C++ -*-===//
//
// Part of Kiln. Iteration-level scheduling (Orca, vLLM): every step is
// planned afresh from the sequences alive at that moment, so requests join
// and leave between steps and a step mixes decode tokens with chunks of
// prompts. Each step has a budget of tokens:
//
//  1. Decodes first. Every running sequence with one token to feed gets it,
//     oldest first: decode tokens are cheap (a step reads the weights once
//     whatever it holds) and delaying them is what users see.
//  2. Then prefill chunks, in order of waiting time: the sequence that has
//     gone longest without being served comes first (its waiting time is its
//     priority, so it only grows while it waits: aging), the oldest request
//     on ties. A chunk is as long as the budget left allows; a long prompt
//     goes back behind the others after each chunk, so a short request queued
//     behind K prompts being prefilled is served within K + 1 steps (given
//     cache room and a budget larger than the running decodes).
//
// KV cache room is reserved through the executor before a sequence's tokens
// enter the plan. When it runs out, the newest running sequence is
// preempted: its room is freed and it goes back to waiting, to be computed
// again (recomputation; its whole blocks stay in the prefix cache, where they
// are reused unless something needs the room). Batched steps are bitwise
// batch-invariant, so a preempted sequence continues exactly as it would
// have. A sequence the cache cannot hold even alone fails with a message.
//
// No threads here: the Engine calls schedule(), runs the step, then
// commit() and append(); tests drive it with a fake executor.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_ENGINE_SCHEDULER_H
#define KILN_RUNTIME_ENGINE_SCHEDULER_H

#include "runtime/StepBatch.h"
#include "runtime/engine/StepExecutor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime {

using RequestId = uint64_t;

struct SchedulerOptions {
  /// Tokens one step holds at most; 0: the executor's preferred step size.
  int32_t stepTokens = 0;
  /// Sequences holding cache slots at once; 0 (or more than the executor
  /// has): the executor's slots.
  int32_t maxRunning = 0;
  /// Reuse computed whole blocks across sequences with equal prefixes
  /// (a shared system prompt is computed and stored once).
  bool prefixCaching = true;
};

/// One sequence's share of a step: positions [begin, end) of its tokens.
struct StepSlice {
  RequestId id = 0;
  int32_t slot = -1; ///< the cache slot (the step's sequence id)
  int64_t begin = 0, end = 0;
  bool sampled = false; ///< its last token's logits are a logit row
};

struct ScheduledStep {
  int64_t number = 0; ///< 1 for the first step
  StepBatch batch;
  std::vector<StepSlice> slices;
  /// The request each logit row samples for, in row order.
  std::vector<RequestId> rowRequests;
  int32_t decodeTokens = 0, prefillTokens = 0;
  /// Sequences preempted while planning this step.
  std::vector<RequestId> preempted;
  /// Sequences that can never run (the cache cannot hold them alone), with
  /// why; they are removed.
  std::vector<std::pair<RequestId, std::string>> failed;

  bool empty() const { return batch.numTokens() == 0; }
};

enum class SequenceState { Waiting, Running };

/// What the scheduler knows of one sequence (for metrics and tests).
struct SequenceStatus {
  SequenceState state = SequenceState::Waiting;
  int32_t slot = -1;
  int64_t tokens = 0;   ///< prompt and appended tokens
  int64_t computed = 0; ///< tokens whose keys and values are cached
  int32_t preemptions = 0;
  /// The step that first served it (0: not yet).
  int64_t firstServedStep = 0;
};

class Scheduler {
public:
  explicit Scheduler(StepExecutor &executor, SchedulerOptions options = {});

  /// Queues a sequence that will compute `tokens` (its prompt) and then
  /// the tokens appended to it. Throws std::invalid_argument when the id is
  /// in use, `tokens` is empty or longer than the context, or the cache
  /// could never hold it.
  void add(RequestId id, std::vector<int32_t> tokens);

  /// Plans the next step (empty when nothing can run).
  ScheduledStep schedule();
  /// The executor ran `step`: its slices' tokens are now computed.
  void commit(const ScheduledStep &step);
  /// Appends the token sampled for `id`, to be fed by a later step.
  void append(RequestId id, int32_t token);
  /// Forgets a sequence (finished, cancelled, failed): its slot and cache
  /// room are free at once. False for an unknown id.
  bool remove(RequestId id);

  bool empty() const { return sequences.empty(); }
  int32_t waiting() const;
  int32_t running() const { return runningCount; }
  int64_t preemptions() const { return preemptionCount; }
  int64_t steps() const { return stepNumber; }
  int32_t stepTokens() const { return budget; }
  /// Sequences that may run at once (cache slots in use or free).
  int32_t slotCount() const { return slots; }
  std::optional<SequenceStatus> status(RequestId id) const;

private:
  struct Sequence {
    RequestId id = 0;
    uint64_t arrival = 0; ///< order of add()
    std::vector<int32_t> tokens;
    int64_t computed = 0;
    int32_t slot = -1;
    int64_t lastServed = 0; ///< step that last served it (add: the step before)
    int64_t firstServed = 0;
    int64_t promptLength = 0;
    bool promptCached = false;
    int32_t preemptions = 0;

    int64_t pending() const { return int64_t(tokens.size()) - computed; }
  };

  /// Reserves positions [computed, computed + n) of `seq`, preempting newer
  /// running sequences not yet in the plan while that helps; shrinks a
  /// prefill chunk when only part of it fits. Returns the positions
  /// reserved (0: none).
  int64_t reserve(Sequence &seq, int64_t n, bool shrink,
                  const std::vector<RequestId> &placed, ScheduledStep &step);
  /// The newest running sequence newer than `than` and not in `placed`.
  Sequence *newestVictim(const Sequence &than,
                         const std::vector<RequestId> &placed);
  void preempt(Sequence &seq, ScheduledStep &step);
  bool takeSlot(Sequence &seq);
  void releaseSlot(Sequence &seq);
  void place(Sequence &seq, int64_t n, ScheduledStep &step);

  StepExecutor &executor;
  SchedulerOptions options;
  StepLimits limits;
  int32_t budget = 0;
  int32_t slots = 0;
  std::map<RequestId, Sequence> sequences;
  std::vector<int32_t> freeSlots; ///< a stack, lowest slot on top
  int32_t runningCount = 0;
  uint64_t nextArrival = 0;
  int64_t stepNumber = 0;
  int64_t preemptionCount = 0;
};

} // namespace kiln::runtime

#endif // KILN_RUNTIME_ENGINE_SCHEDULER_H
