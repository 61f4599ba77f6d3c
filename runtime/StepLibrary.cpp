//===- StepLibrary.cpp - An artifact's compiled step, loaded --------------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "runtime/StepLibrary.h"

#include "runtime/Artifact.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace kiln::runtime {

namespace {

std::string lastDlError() {
  const char *error = dlerror();
  return error ? error : "unknown dynamic loader error";
}

bool writeAll(int fd, std::string_view bytes) {
  const char *p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

/// dlopen()s the file open as `fd` through /proc/self/fd. glibc recognises
/// an already loaded library by its path string before it looks at the
/// file, and fd numbers are reused: a library loaded earlier from the same
/// number (and not unloaded, as C++ code with unique symbols never is) would
/// be handed back instead of this one. So when the path is taken, the fd is
/// duplicated to a fresh number and the check repeated.
void *openThroughProc(int fd, std::string &error) {
  std::vector<int> duplicates;
  void *handle = nullptr;
  for (int attempt = 0; attempt < 64 && !handle; ++attempt) {
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (::access(path.c_str(), R_OK) != 0) {
      error = path + " is not readable (is /proc mounted?)";
      break;
    }
    if (void *stale = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD)) {
      dlclose(stale);
      int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
      if (copy < 0) {
        error = std::string("cannot duplicate a descriptor: ") +
                std::strerror(errno);
        break;
      }
      duplicates.push_back(copy);
      fd = copy;
      continue;
    }
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      error = lastDlError();
  }
  // Mapped by dlopen; the descriptors are no longer needed.
  for (int copy : duplicates)
    ::close(copy);
  return handle;
}

/// The bytes in an anonymous memory file, loaded; nullptr with `error` set
/// when memfd_create or the load fails.
void *loadFromMemfd(std::string_view code, std::string &error) {
  int fd = ::memfd_create("kiln-step", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  void *handle = nullptr;
  if (!writeAll(fd, code))
    error =
        std::string("cannot write to the memory file: ") + std::strerror(errno);
  else
    handle = openThroughProc(fd, error);
  ::close(fd);
  return handle;
}

/// The fallback: a temporary file, unlinked once dlopen has mapped it.
void *loadFromTempFile(std::string_view code, std::string &error) {
  const char *dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/kiln-step-XXXXXX";
  int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    error = "cannot create a temporary file like " + path + ": " +
            std::strerror(errno);
    return nullptr;
  }
  void *handle = nullptr;
  bool written = writeAll(fd, code);
  int closed = ::close(fd);
  if (!written || closed != 0) {
    error = "cannot write " + path + ": " + std::strerror(errno);
  } else {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      error = lastDlError();
  }
  ::unlink(path.c_str());
  return handle;
}

} // namespace

StepLibrary StepLibrary::load(std::string_view code,
                              const std::string &artifactName) {
  const std::string where = artifactName + ": section 'code'";
  if (code.empty())
    throw ArtifactError(where + " is empty; expected a shared library");

  // A loader error from the memory file is as good as one from the
  // temporary file (both read the same bytes), but a kernel that refuses to
  // map memory files executable (vm.memfd_noexec) needs the fallback.
  std::string memfdError, tempError;
  void *handle = loadFromMemfd(code, memfdError);
  if (!handle)
    handle = loadFromTempFile(code, tempError);
  if (!handle) {
    // dlerror() starts with the path; when only that differs, the bytes are
    // at fault and one message says so.
    auto afterPath = [](const std::string &error) {
      size_t colon = error.find(": ");
      return colon == std::string::npos ? error : error.substr(colon);
    };
    bool sameCause = afterPath(memfdError) == afterPath(tempError);
    throw ArtifactError(
        where + " cannot be loaded as a shared library: " +
        (memfdError.empty() || sameCause
             ? tempError
             : memfdError + "; from a temporary file: " + tempError));
  }

  auto resolve = [&](const char *symbol) {
    dlerror(); // Clear any earlier error.
    void *address = dlsym(handle, symbol);
    if (!address) {
      std::string error = lastDlError();
      dlclose(handle);
      throw ArtifactError(where + ": the step library does not export " +
                          symbol + " (" + error + ")");
    }
    return address;
  };
  auto versionFn =
      reinterpret_cast<int32_t (*)(void)>(resolve("kiln_step_abi_version"));
  auto stepFn = reinterpret_cast<StepFn>(resolve("kiln_step"));
  int32_t version = versionFn();
  if (version != KILN_STEP_ABI_VERSION) {
    dlclose(handle);
    throw ArtifactError(where + ": the step library has ABI version " +
                        std::to_string(version) + ", this Kiln runs version " +
                        std::to_string(KILN_STEP_ABI_VERSION) +
                        "; compile the model again with this Kiln");
  }
  return StepLibrary(handle, stepFn, version);
}

StepLibrary StepLibrary::load(const Artifact &artifact) {
  return load(artifact.section(section::kCode), artifact.path());
}

StepLibrary::~StepLibrary() {
  if (handle)
    dlclose(handle);
}

StepLibrary::StepLibrary(StepLibrary &&other) noexcept
    : handle(other.handle), stepFn(other.stepFn), version(other.version) {
  other.handle = nullptr;
  other.stepFn = nullptr;
}

StepLibrary &StepLibrary::operator=(StepLibrary &&other) noexcept {
  if (this != &other) {
    if (handle)
      dlclose(handle);
    handle = other.handle;
    stepFn = other.stepFn;
    version = other.version;
    other.handle = nullptr;
    other.stepFn = nullptr;
  }
  return *this;
}

std::vector<std::string> StepLibrary::callNames() const {
  using CountFn = int32_t (*)();
  using NameFn = const char *(*)(int32_t);
  auto count = reinterpret_cast<CountFn>(dlsym(handle, "kiln_step_call_count"));
  auto name = reinterpret_cast<NameFn>(dlsym(handle, "kiln_step_call_name"));
  std::vector<std::string> names;
  if (!count || !name)
    return names;
  for (int32_t i = 0, n = count(); i < n; ++i)
    names.push_back(name(i));
  return names;
}

void *StepLibrary::symbol(const char *name) const {
  return handle ? dlsym(handle, name) : nullptr;
}

} // namespace kiln::runtime
