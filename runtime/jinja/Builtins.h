//===- Builtins.h - Jinja's filters, tests, globals and methods -*- C++ -*-===//
//
// Part of Kiln's Jinja engine. What a template can call, each behaving as
// in jinja2 3.1 under transformers' ImmutableSandboxedEnvironment:
//
//  - Filters.cpp: `x | name(args)` (tojson is transformers' json.dumps one);
//  - Tests.cpp: `x is name(args)`;
//  - Attributes.cpp: `x.name` and `x[key]` with jinja2's lookup order, and
//    the Python methods of str, dict and list (the mutating ones are refused
//    as the sandbox refuses them);
//  - Globals.cpp: range, dict, namespace, raise_exception, strftime_now.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_JINJA_BUILTINS_H
#define KILN_RUNTIME_JINJA_BUILTINS_H

#include "runtime/jinja/Value.h"

#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace kiln::runtime::jinja {

/// Binds `args` to `parameters` as Python binds a call: positional first,
/// then keywords by name. Parameters not given are nullopt. Too many
/// arguments, an unknown keyword or a parameter given twice is a
/// TemplateError naming `function`.
std::vector<std::optional<Value>>
bindArgs(const CallArgs &args, const std::string &function,
         std::initializer_list<const char *> parameters);

/// The items a for loop visits: a list's or tuple's items, a dict's keys, a
/// string's characters, nothing for Undefined; an error for other values.
ValueList iterate(const Value &value);
/// Python's len(); Undefined has length 0.
int64_t length(const Value &value);
/// Python's `item in container`.
bool contains(const Value &container, const Value &item);

/// `object.name`: a Python attribute (a method) first, then the item.
Value getAttribute(const Value &object, const std::string &name);
/// `object[key]`: the item first, then (for a string key) the attribute.
/// A missing one is Undefined saying what was missing; an Undefined object
/// is an error.
Value getItem(const Value &object, const Value &key);
/// `object[start:stop:step]` for lists, tuples and strings.
Value getSlice(const Value &object, const Value &start, const Value &stop,
               const Value &step);

/// Applies filter `name`; throws TemplateError for an unknown filter.
Value applyFilter(const std::string &name, const Value &input,
                  const CallArgs &args);
/// Whether test `name` holds; throws TemplateError for an unknown test.
bool applyTest(const std::string &name, const Value &subject,
               const CallArgs &args);

/// The global functions, with strftime_now reading `now` (the current local
/// time when absent).
ValueDict makeGlobals(const std::optional<std::tm> &now);

} // namespace kiln::runtime::jinja

#endif // KILN_RUNTIME_JINJA_BUILTINS_H
