//===- ConnectionWatch.cpp - Has the client of a request gone? ------------===//
//
// Part of Kiln's server. See ConnectionWatch.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/server/ConnectionWatch.h"

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <mutex>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kiln::runtime::server {

namespace {

/// An address as cpp-httplib writes Request::remote_addr and local_addr.
bool numericName(const sockaddr_storage &address, socklen_t length,
                 std::string &host, int &port) {
  char hostBuf[NI_MAXHOST], portBuf[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr *>(&address), length, hostBuf,
                  sizeof hostBuf, portBuf, sizeof portBuf,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return false;
  host = hostBuf;
  port = std::atoi(portBuf);
  return true;
}

/// Whether descriptor `fd` is a socket, from its /proc link ("socket:[N]"):
/// no call on the descriptor itself, which another thread may be closing.
bool isSocket(const char *fdName) {
  char link[64];
  std::string path = std::string("/proc/self/fd/") + fdName;
  ssize_t length = readlink(path.c_str(), link, sizeof link - 1);
  return length > 7 && std::strncmp(link, "socket:", 7) == 0;
}

/// Whether socket `fd` is connected from `ends.local` to `ends.remote`.
bool isConnection(int fd, const ConnectionEnds &ends) {
  sockaddr_storage address;
  socklen_t length = sizeof address;
  std::string host;
  int port = -1;
  if (getpeername(fd, reinterpret_cast<sockaddr *>(&address), &length) != 0 ||
      !numericName(address, length, host, port) || port != ends.remotePort ||
      host != ends.remoteAddress)
    return false;
  length = sizeof address;
  return getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length) ==
             0 &&
         numericName(address, length, host, port) && port == ends.localPort &&
         host == ends.localAddress;
}

} // namespace

ConnectionWatch::ConnectionWatch(const ConnectionEnds &ends) {
  if (ends.remotePort < 0 || ends.localPort < 0)
    return;
  // One scan at a time, so that no scan sees another's directory
  // descriptor, which that scan closes when it ends.
  static std::mutex scanning;
  std::lock_guard<std::mutex> lock(scanning);
  DIR *dir = opendir("/proc/self/fd");
  if (!dir)
    return;
  while (dirent *entry = readdir(dir)) {
    char *end = nullptr;
    long number = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || number == dirfd(dir))
      continue;
    if (isSocket(entry->d_name) && isConnection(int(number), ends)) {
      fd = int(number);
      break;
    }
  }
  closedir(dir);
}

bool ConnectionWatch::peerClosed() const {
  if (fd < 0)
    return false;
  pollfd p{fd, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0)
    return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

} // namespace kiln::runtime::server
