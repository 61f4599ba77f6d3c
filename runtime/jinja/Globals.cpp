//===- Globals.cpp - Functions every template can call --------------------===//
//
// Part of Kiln's Jinja engine: jinja2's range, dict and namespace, and the
// two globals transformers adds for chat templates, raise_exception (the
// template refuses a conversation) and strftime_now (today's date in the
// system prompt).
//
//===----------------------------------------------------------------------===//

#include "runtime/jinja/Builtins.h"

namespace kiln::runtime::jinja {

namespace {

/// The sandbox's limit on range() sizes.
constexpr int64_t kMaxRange = 100000;

Value range(CallArgs &args) {
  if (!args.keywords.empty() || args.positional.empty() ||
      args.positional.size() > 3)
    throw TemplateError("range() takes 1 to 3 integer arguments");
  std::vector<int64_t> n;
  for (const Value &v : args.positional) {
    if (v.kind() != Value::Kind::Int && v.kind() != Value::Kind::Bool)
      throw TemplateError("range(): '" + v.typeName() +
                          "' object cannot be interpreted as an integer");
    n.push_back(v.asInt());
  }
  int64_t start = n.size() > 1 ? n[0] : 0;
  int64_t stop = n.size() > 1 ? n[1] : n[0];
  int64_t step = n.size() > 2 ? n[2] : 1;
  if (step == 0)
    throw TemplateError("range() arg 3 must not be zero");
  ValueList items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (int64_t(items.size()) >= kMaxRange)
      throw TemplateError("range too big, maximum size for range is " +
                          std::to_string(kMaxRange));
    items.emplace_back(i);
  }
  return Value::list(std::move(items));
}

/// dict(**kwargs) and namespace(mapping, **kwargs) both start from an
/// optional mapping and add the keywords.
ValueDict entriesOf(CallArgs &args, const char *function) {
  if (args.positional.size() > 1)
    throw TemplateError(std::string(function) +
                        "() takes at most one positional argument");
  ValueDict out;
  if (!args.positional.empty()) {
    const Value &initial = args.positional[0];
    if (!initial.isMapping())
      throw TemplateError(std::string(function) + "() takes a mapping, not " +
                          initial.typeName());
    out = initial.asDict();
  }
  for (auto &[key, value] : args.keywords)
    out.set(key, value);
  return out;
}

} // namespace

ValueDict makeGlobals(const std::optional<std::tm> &now) {
  ValueDict globals;
  globals.set("range", Value::callable("range", range));
  globals.set("dict", Value::callable("dict", [](CallArgs &args) {
                return Value::dict(entriesOf(args, "dict"));
              }));
  globals.set("namespace", Value::callable("namespace", [](CallArgs &args) {
                return Value::makeNamespace(entriesOf(args, "namespace"));
              }));
  globals.set("raise_exception",
              Value::callable("raise_exception", [](CallArgs &args) -> Value {
                auto p = bindArgs(args, "raise_exception", {"message"});
                throw TemplateError(p[0] ? toStr(*p[0]) : "raise_exception");
              }));
  globals.set("strftime_now",
              Value::callable("strftime_now", [now](CallArgs &args) {
                auto p = bindArgs(args, "strftime_now", {"format"});
                if (!p[0] || !p[0]->isString())
                  throw TemplateError("strftime_now() takes a format string");
                std::tm time = {};
                if (now) {
                  time = *now;
                } else {
                  std::time_t t = std::time(nullptr);
                  localtime_r(&t, &time);
                }
                char buffer[512];
                size_t n = std::strftime(buffer, sizeof buffer,
                                         p[0]->asString().c_str(), &time);
                return Value(std::string(buffer, n));
              }));
  return globals;
}

} // namespace kiln::runtime::jinja
