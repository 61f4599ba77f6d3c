//===- FuzzServerRequest.cpp - libFuzzer target: HTTP request bodies ------===//
//
// Part of Kiln. Request bodies come from anyone who can reach the server,
// so any bytes given to the request parser give a request or an ApiError
// with a 4xx status and a message; nothing else (no exception, no crash).
// The first byte picks the endpoint. A parsed completion request also
// satisfies what the engine checks again (validate()).
//
//===----------------------------------------------------------------------===//

#include "runtime/server/RequestParser.h"
#include "runtime/server/Responses.h"

#include <cstdlib>

using namespace kiln::runtime;
using namespace kiln::runtime::server;

namespace {

template <typename T> void check(const Parsed<T> &parsed) {
  if (parsed.ok)
    return;
  if (parsed.error.status < 400 || parsed.error.status >= 500 ||
      parsed.error.message.empty())
    std::abort();
  (void)errorBody(parsed.error); // the error's JSON is always writable
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  ParseLimits limits;
  limits.vocabSize = 512;
  limits.contextLength = 4096;
  std::string_view body(reinterpret_cast<const char *>(data) + 1, size - 1);
  switch (data[0] % 4) {
  case 0:
  case 1: {
    Parsed<CompletionRequest> parsed =
        parseCompletionRequest(body, data[0] % 4 == 1, limits);
    check(parsed);
    if (parsed.ok)
      validate(parsed.request.sampling, limits.vocabSize); // must not throw
    break;
  }
  case 2:
    check(parseTokenizeRequest(body, limits));
    break;
  default:
    check(parseDetokenizeRequest(body, limits));
    break;
  }
  return 0;
}
