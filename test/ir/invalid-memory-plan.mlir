// RUN: kiln-opt %s -split-input-file -verify-diagnostics

// The memory plan's attributes (written by --kiln-plan-memory, read by code
// generation; docs/passes/memory-planning.md) keep their shape.

func.func @buffers_per_result(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'kiln.buffers' must be an array with one dictionary per result}}
  %y = kiln.silu %x {kiln.buffers = [{offset = 0 : i64}, {offset = 64 : i64}]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @buffers_dictionaries(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{'kiln.buffers' must be an array with one dictionary per result}}
  %y = kiln.silu %x {kiln.buffers = [0 : i64]} : tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// expected-error @+1 {{'kiln.memory_plan' must be a dictionary on a kiln.step function}}
func.func @plan_on_a_step_only(%x: tensor<?x16xf32>) -> tensor<?x16xf32>
    attributes {kiln.memory_plan = {arena_bytes = 0 : i64}} {
  return %x : tensor<?x16xf32>
}
