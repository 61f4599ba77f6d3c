//===- CompileCache.cpp - Where compiled artifacts are kept ---------------===//
//
// Part of Kiln's compiler driver. See CompileCache.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/driver/CompileCache.h"

#include "codegen/WriteArtifact.h"

#include "llvm/Support/SHA256.h"

#include <cstdio>
#include <cstdlib>

namespace fs = std::filesystem;

namespace kiln {

fs::path compileCacheDirectory() {
  if (const char *dir = std::getenv("KILN_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "kiln";
  if (const char *home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "kiln";
  return fs::temp_directory_path() / "kiln-cache";
}

std::string
compileCacheKey(const CompileOptions &o,
                const std::vector<target::TargetDescription> &targets) {
  llvm::SHA256 hash;
  auto add = [&](const std::string &text) {
    hash.update(text);
    hash.update(llvm::StringRef("\0", 1));
  };
  add(codegen::kKilnVersion);
  // A rebuilt Kiln may generate other code: the executable's identity.
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  add(self.string());
  add(std::to_string(fs::file_size(self, ec)));
  add(std::to_string(fs::last_write_time(self, ec).time_since_epoch().count()));
  // Every target, in the order given: each is a library of the artifact.
  add(std::to_string(targets.size()));
  for (const target::TargetDescription &t : targets)
    add(t.spec());
  add(o.dtype);
  add(o.quantize.empty() ? "-" : o.quantize);
  add(o.kvType);
  add(std::to_string(o.maxTokens));
  add(std::to_string(o.context));
  add(o.fusion ? "fusion" : "no-fusion");
  for (const std::string &file :
       {o.model, o.tokenizer, o.chatTemplate, o.fusionRules, o.tuningFile}) {
    if (file.empty()) {
      add("-");
      continue;
    }
    fs::path path = fs::absolute(file, ec);
    add(path.string());
    if (fs::is_regular_file(path, ec)) {
      add(std::to_string(fs::file_size(path, ec)));
      add(std::to_string(
          fs::last_write_time(path, ec).time_since_epoch().count()));
    }
  }
  std::array<uint8_t, 32> digest = hash.final();
  std::string hex;
  for (int i = 0; i < 12; ++i) {
    char byte[3];
    std::snprintf(byte, sizeof byte, "%02x", digest[i]);
    hex += byte;
  }
  return hex;
}

fs::path
compileCachePath(const CompileOptions &options,
                 const std::vector<target::TargetDescription> &targets) {
  fs::path dir = compileCacheDirectory();
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir / (compileCacheKey(options, targets) + ".kiln");
}

} // namespace kiln
