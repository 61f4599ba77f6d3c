//===- ConnectionWatch.h - Has the client of a request gone? ----*- C++ -*-===//
//
// Part of Kiln's server (docs/server.md, "Backpressure, deadlines,
// disconnects"). A non-streaming request's handler waits for the whole
// generation without writing, so a client that leaves is not noticed by a
// failed write as a stream's is. cpp-httplib 0.11 gives handlers no access
// to their connection, but a request carries both ends' addresses, and a
// TCP connection is named by them: ConnectionWatch finds this process's
// socket with that address pair and asks it, without reading, whether the
// peer has closed it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SERVER_CONNECTIONWATCH_H
#define KILN_RUNTIME_SERVER_CONNECTIONWATCH_H

#include <string>

namespace kiln::runtime::server {

/// Both ends of a TCP connection, numeric as cpp-httplib writes them
/// (getnameinfo with NI_NUMERICHOST).
struct ConnectionEnds {
  std::string localAddress;
  int localPort = -1;
  std::string remoteAddress;
  int remotePort = -1;
};

/// Watches one connection of this process for the peer's close. Valid
/// while the connection's worker answers the request: httplib closes the
/// socket only after the handler returns, so the descriptor found cannot
/// be reused meanwhile.
class ConnectionWatch {
public:
  /// Finds the socket (a scan of /proc/self/fd, one thread at a time);
  /// when none matches (not Linux, or a test without a real connection)
  /// peerClosed() is always false and the request runs to its end.
  explicit ConnectionWatch(const ConnectionEnds &ends);

  /// True once the peer has shut its side down (a FIN or a reset). A
  /// client that only half-closes after its request also counts as gone,
  /// as in later cpp-httplib versions' is_connection_closed(). Reads
  /// nothing: bytes a client pipelined after its request stay for httplib.
  bool peerClosed() const;

private:
  int fd = -1;
};

} // namespace kiln::runtime::server

#endif // KILN_RUNTIME_SERVER_CONNECTIONWATCH_H
