//===- Scheduler.cpp - Continuous batching, one step at a time ------------===//
//
// Part of Kiln. See Scheduler.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/engine/Scheduler.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::runtime {

namespace {

bool contains(const std::vector<RequestId> &ids, RequestId id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

} // namespace

Scheduler::Scheduler(StepExecutor &executor, SchedulerOptions options)
    : executor(executor), options(options), limits(executor.limits()) {
  budget = options.stepTokens > 0 ? options.stepTokens
                                  : executor.preferredStepTokens();
  if (budget <= 0)
    throw std::invalid_argument("scheduler: a step must hold at least one "
                                "token");
  slots = limits.maxSequences;
  if (options.maxRunning > 0 && options.maxRunning < slots)
    slots = options.maxRunning;
  if (slots <= 0)
    throw std::invalid_argument("scheduler: the executor has no cache slots");
  for (int32_t slot = slots - 1; slot >= 0; --slot)
    freeSlots.push_back(slot);
}

void Scheduler::add(RequestId id, std::vector<int32_t> tokens) {
  if (sequences.count(id))
    throw std::invalid_argument("scheduler: request " + std::to_string(id) +
                                " is already queued");
  if (tokens.empty())
    throw std::invalid_argument("scheduler: a request needs at least one "
                                "prompt token");
  if (int64_t(tokens.size()) > limits.contextLength)
    throw std::invalid_argument(
        "the prompt is " + std::to_string(tokens.size()) +
        " tokens, longer than the context of " +
        std::to_string(limits.contextLength) + " positions");
  KVCacheUsage kv = executor.usage();
  int64_t capacity = int64_t(kv.totalBlocks) * kv.blockPositions;
  if (kv.blockPositions > 0 && int64_t(tokens.size()) > capacity)
    throw std::invalid_argument(
        "the prompt is " + std::to_string(tokens.size()) +
        " tokens and the KV cache holds " + std::to_string(capacity) +
        " positions in all (--kv-memory raises it)");
  Sequence seq;
  seq.id = id;
  seq.arrival = nextArrival++;
  seq.promptLength = int64_t(tokens.size());
  seq.tokens = std::move(tokens);
  seq.lastServed = stepNumber;
  sequences.emplace(id, std::move(seq));
}

int32_t Scheduler::waiting() const {
  return int32_t(sequences.size()) - runningCount;
}

std::optional<SequenceStatus> Scheduler::status(RequestId id) const {
  auto it = sequences.find(id);
  if (it == sequences.end())
    return std::nullopt;
  const Sequence &seq = it->second;
  SequenceStatus s;
  s.state = seq.slot >= 0 ? SequenceState::Running : SequenceState::Waiting;
  s.slot = seq.slot;
  s.tokens = int64_t(seq.tokens.size());
  s.computed = seq.computed;
  s.preemptions = seq.preemptions;
  s.firstServedStep = seq.firstServed;
  return s;
}

bool Scheduler::takeSlot(Sequence &seq) {
  if (freeSlots.empty())
    return false;
  seq.slot = freeSlots.back();
  freeSlots.pop_back();
  ++runningCount;
  // Whole blocks another sequence computed with the same start (a shared
  // system prompt, or this sequence's own blocks before a preemption).
  if (options.prefixCaching && seq.computed == 0)
    seq.computed = executor.attachCachedPrefix(seq.slot, seq.tokens);
  return true;
}

void Scheduler::releaseSlot(Sequence &seq) {
  if (seq.slot < 0)
    return;
  executor.release(seq.slot);
  // Lowest slots are reused first, so a quiet engine keeps using slot 0.
  freeSlots.push_back(seq.slot);
  std::sort(freeSlots.begin(), freeSlots.end(), std::greater<int32_t>());
  seq.slot = -1;
  --runningCount;
}

void Scheduler::preempt(Sequence &seq, ScheduledStep &step) {
  // Its computed whole blocks go to the prefix cache: when nothing needs
  // the room before it runs again, they are reused instead of recomputed.
  if (options.prefixCaching && seq.computed > 0)
    executor.cachePrefix(
        seq.slot, std::vector<int32_t>(seq.tokens.begin(),
                                       seq.tokens.begin() + seq.computed));
  releaseSlot(seq);
  seq.computed = 0;
  ++seq.preemptions;
  ++preemptionCount;
  step.preempted.push_back(seq.id);
}

Scheduler::Sequence *
Scheduler::newestVictim(const Sequence &than,
                        const std::vector<RequestId> &placed) {
  Sequence *victim = nullptr;
  for (auto &[id, seq] : sequences)
    if (seq.slot >= 0 && seq.arrival > than.arrival && !contains(placed, id) &&
        (!victim || seq.arrival > victim->arrival))
      victim = &seq;
  return victim;
}

int64_t Scheduler::reserve(Sequence &seq, int64_t n, bool shrink,
                           const std::vector<RequestId> &placed,
                           ScheduledStep &step) {
  for (;;) {
    for (int64_t m = n; m > 0; m = shrink ? m / 2 : 0)
      if (executor.reserve(seq.slot, seq.computed, seq.computed + m))
        return m;
    Sequence *victim = newestVictim(seq, placed);
    if (!victim)
      return 0;
    preempt(*victim, step);
  }
}

void Scheduler::place(Sequence &seq, int64_t n, ScheduledStep &step) {
  StepSlice slice;
  slice.id = seq.id;
  slice.slot = seq.slot;
  slice.begin = seq.computed;
  slice.end = seq.computed + n;
  slice.sampled = slice.end == int64_t(seq.tokens.size());
  for (int64_t p = slice.begin; p < slice.end; ++p) {
    bool logits = slice.sampled && p + 1 == slice.end;
    step.batch.addToken(seq.slot, seq.tokens[size_t(p)], int32_t(p), logits);
    if (logits)
      step.rowRequests.push_back(seq.id);
  }
  step.slices.push_back(slice);
}

ScheduledStep Scheduler::schedule() {
  ScheduledStep step;
  step.number = ++stepNumber;
  int64_t left = budget;
  std::vector<RequestId> placed;

  // 1. Decodes, oldest first.
  std::vector<Sequence *> order;
  for (auto &[id, seq] : sequences)
    order.push_back(&seq);
  std::sort(order.begin(), order.end(),
            [](const Sequence *a, const Sequence *b) {
              return a->arrival < b->arrival;
            });
  for (Sequence *seq : order) {
    if (left == 0)
      break;
    if (seq->slot < 0 || seq->pending() != 1)
      continue;
    if (reserve(*seq, 1, /*shrink=*/false, placed, step) == 0) {
      // Nothing newer is left to give way: this one does.
      preempt(*seq, step);
      continue;
    }
    place(*seq, 1, step);
    placed.push_back(seq->id);
    ++step.decodeTokens;
    --left;
  }

  // 2. Prefill chunks, longest waiting first (aging), oldest on ties.
  std::vector<Sequence *> prefills;
  for (Sequence *seq : order)
    if (seq->pending() > 1 || (seq->slot < 0 && seq->pending() > 0))
      prefills.push_back(seq);
  std::sort(prefills.begin(), prefills.end(),
            [](const Sequence *a, const Sequence *b) {
              return a->lastServed != b->lastServed
                         ? a->lastServed < b->lastServed
                         : a->arrival < b->arrival;
            });
  for (Sequence *seq : prefills) {
    if (left == 0)
      break;
    // Placed already, or preempted for room a moment ago (taking it back
    // now would only undo that).
    if (contains(placed, seq->id) || contains(step.preempted, seq->id))
      continue;
    bool tookSlot = false;
    if (seq->slot < 0) {
      if (!takeSlot(*seq))
        continue;
      tookSlot = true;
    }
    int64_t n = std::min(seq->pending(), left);
    n = reserve(*seq, n, /*shrink=*/true, placed, step);
    if (n == 0) {
      if (tookSlot) { // wait without holding a slot (or cached blocks)
        releaseSlot(*seq);
        seq->computed = 0;
      }
      continue;
    }
    place(*seq, n, step);
    placed.push_back(seq->id);
    step.prefillTokens += int32_t(n);
    left -= n;
  }

  // 3. Nothing could run although sequences wait: the oldest one could not
  // get room even with every newer one preempted, so the cache cannot hold
  // it at all.
  if (step.empty() && !sequences.empty()) {
    Sequence *oldest = order.front();
    for (Sequence *seq : order)
      if (sequences.count(seq->id) && seq->pending() > 0) {
        oldest = seq;
        break;
      }
    KVCacheUsage kv = executor.usage();
    step.failed.emplace_back(
        oldest->id,
        "the KV cache cannot hold this sequence: it needs " +
            std::to_string(oldest->tokens.size()) +
            " positions and the cache "
            "holds " +
            std::to_string(int64_t(kv.totalBlocks) * kv.blockPositions) +
            " in all (--kv-memory raises it)");
    remove(oldest->id);
  }
  return step;
}

void Scheduler::commit(const ScheduledStep &step) {
  for (const StepSlice &slice : step.slices) {
    auto it = sequences.find(slice.id);
    if (it == sequences.end())
      continue; // removed since (cancelled while the step ran)
    Sequence &seq = it->second;
    seq.computed = std::max(seq.computed, slice.end);
    seq.lastServed = step.number;
    if (seq.firstServed == 0)
      seq.firstServed = step.number;
    if (options.prefixCaching && !seq.promptCached &&
        seq.computed >= seq.promptLength) {
      executor.cachePrefix(
          seq.slot,
          std::vector<int32_t>(seq.tokens.begin(),
                               seq.tokens.begin() + seq.promptLength));
      seq.promptCached = true;
    }
  }
}

void Scheduler::append(RequestId id, int32_t token) {
  auto it = sequences.find(id);
  if (it == sequences.end())
    throw std::invalid_argument("scheduler: no request " + std::to_string(id));
  it->second.tokens.push_back(token);
}

bool Scheduler::remove(RequestId id) {
  auto it = sequences.find(id);
  if (it == sequences.end())
    return false;
  releaseSlot(it->second);
  sequences.erase(it);
  return true;
}

} // namespace kiln::runtime
