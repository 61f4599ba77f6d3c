//===- WeightProvider.cpp - Where a module's weights come from ------------===//
//
// Part of Kiln. See WeightProvider.h; this file anchors its vtable.
//
//===----------------------------------------------------------------------===//

#include "ir/WeightProvider.h"

kiln::WeightProvider::~WeightProvider() = default;
