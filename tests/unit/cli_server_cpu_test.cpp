// The bench's reading of the Redis server's CPU time (tools/cli/bench_server_cpu.hpp): the main
// thread's where the server reports it, else the whole process's, else nothing.
#include <gtest/gtest.h>

#include "bench_server_cpu.hpp"

namespace rlock::cli {
namespace {

TEST(cli_server_cpu, sums_the_main_threads_user_and_system_time) {
  const char* info =
      "# CPU\r\n"
      "used_cpu_sys:10.500000\r\n"
      "used_cpu_user:20.250000\r\n"
      "used_cpu_sys_children:0.000000\r\n"
      "used_cpu_user_children:0.000000\r\n"
      "used_cpu_sys_main_thread:1.500000\r\n"
      "used_cpu_user_main_thread:2.250000\r\n";
  EXPECT_DOUBLE_EQ(parse_server_cpu_seconds(info), 3.75);
}

TEST(cli_server_cpu, falls_back_to_the_whole_process_on_servers_before_redis_7) {
  const char* info =
      "# CPU\r\n"
      "used_cpu_sys:10.5\r\n"
      "used_cpu_user:20.25\r\n"
      "used_cpu_sys_children:0.0\r\n"
      "used_cpu_user_children:0.0\r\n";
  EXPECT_DOUBLE_EQ(parse_server_cpu_seconds(info), 30.75);
}

TEST(cli_server_cpu, is_negative_when_the_server_reports_no_pair) {
  EXPECT_LT(parse_server_cpu_seconds(""), 0);
  EXPECT_LT(parse_server_cpu_seconds("# CPU\r\nused_cpu_sys:1.0\r\n"), 0);
  // Half of the main thread's pair does not count as it; the process's pair is used.
  EXPECT_DOUBLE_EQ(parse_server_cpu_seconds("used_cpu_sys_main_thread:1\r\n"
                                            "used_cpu_sys:4\r\nused_cpu_user:5\r\n"),
                   9.0);
  // A value that is no number is no field.
  EXPECT_LT(parse_server_cpu_seconds("used_cpu_sys:x\r\nused_cpu_user:5\r\n"), 0);
}

}  // namespace
}  // namespace rlock::cli
