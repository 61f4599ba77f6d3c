//===- WebPage.h - The page kiln serve shows at / ---------------*- C++ -*-===//
//
// Part of Kiln's server. One self-contained HTML page (no CDN, no build
// step): a chat that streams replies over Server-Sent Events (fetch and a
// ReadableStream), the sampling settings, and live figures polled from
// /metrics. It is in the binary so a server is one file.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_WEBPAGE_H
#define KILN_RUNTIME_SERVER_WEBPAGE_H

namespace kiln::runtime::server {

extern const char *const kWebPage;

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_WEBPAGE_H
