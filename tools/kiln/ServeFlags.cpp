//===- ServeFlags.cpp - kiln serve's command line -------------------------===//
//
// Part of Kiln's command line. See ServeFlags.h.
//
//===----------------------------------------------------------------------===//

#include "tools/kiln/ServeFlags.h"

#include <cctype>

namespace kiln {

CLI::App *addServeCommand(CLI::App &app, ServeOptions &o) {
  CLI::App *cmd = app.add_subcommand(
      "serve", "Answer OpenAI-style HTTP requests (/v1/completions, "
               "/v1/chat/completions, ...) with a model (docs/server.md)");
  o.flags["model"] =
      cmd->add_option("model", o.values["model"],
                      "Artifact or model file (or `model` in --config)");
  cmd->add_option("--config", o.configPath,
                  "TOML file of settings (keys as the flags, with _: "
                  "api_key = \"...\"); flags and KILN_* variables win over "
                  "it (default: $KILN_CONFIG)");
  for (const runtime::server::ConfigKey &key : runtime::server::configKeys()) {
    std::string name = key.name;
    if (name == "model")
      continue;
    std::string flag = "--" + name;
    for (char &c : flag)
      if (c == '_')
        c = '-';
    std::string env = "KILN_";
    for (char c : name)
      env += char(std::toupper(static_cast<unsigned char>(c)));
    o.flags[name] = cmd->add_option(flag, o.values[name],
                                    std::string(key.help) + " [" + env + "]");
  }
  return cmd;
}

runtime::server::Settings serveFlagSettings(const ServeOptions &o) {
  runtime::server::Settings settings;
  for (const auto &[key, option] : o.flags)
    if (option->count() > 0)
      settings[key] = {o.values.at(key), option->get_name()};
  return settings;
}

} // namespace kiln
