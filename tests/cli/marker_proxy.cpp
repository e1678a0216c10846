#include "marker_proxy.hpp"

#include <gtest/gtest.h>

#include "cli_harness.hpp"

namespace rlock::test {
namespace {

// argv: Redis port, marker, file to write the own port into (a FIFO), the hook's argument.
constexpr const char* forwarder = R"(
import socket, sys, threading
rport, marker, port_file, arg = int(sys.argv[1]), sys.argv[2].upper().encode(), sys.argv[3], sys.argv[4]
fired = threading.Event()
def pump(src, dst, watch):
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            if watch and marker in d.upper() and not fired.is_set():
                fired.set()
                hook(rport, arg)
            dst.sendall(d)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
ls = socket.socket()
ls.bind(('127.0.0.1', 0))
ls.listen(16)
with open(port_file, 'w') as f:
    f.write('%d\n' % ls.getsockname()[1])
while True:
    c, _ = ls.accept()
    u = socket.create_connection(('127.0.0.1', rport))
    threading.Thread(target=pump, args=(c, u, True), daemon=True).start()
    threading.Thread(target=pump, args=(u, c, False), daemon=True).start()
)";

}  // namespace

std::optional<marker_proxy> start_marker_proxy(const temp_dir& dir, std::uint16_t redis_port,
                                               const std::string& marker, const std::string& hook,
                                               const std::string& hook_arg) {
  fifo_marker port(dir.path() / "proxy-port");
  child_process process(find_program("python3"),
                        {"-c", hook + "\n" + forwarder, std::to_string(redis_port), marker,
                         port.path().string(), hook_arg},
                        child_options{.capture_stderr = true});
  const auto line = port.read_line(std::chrono::seconds(10));
  [&] { ASSERT_TRUE(line.has_value()) << process.error_output(); }();
  if (!line) return std::nullopt;
  return marker_proxy{std::move(process), *line};
}

}  // namespace rlock::test
