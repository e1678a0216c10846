// The bench's count of the requests rlock clients sent (tools/cli/bench_commandstats.hpp): what
// it counts from INFO commandstats and what it leaves out.
#include <gtest/gtest.h>

#include <string>

#include "bench_commandstats.hpp"

namespace rlock::cli {
namespace {

TEST(cli_commandstats, counts_what_clients_send_and_not_what_scripts_run) {
  const std::string before =
      "# Commandstats\r\n"
      "cmdstat_evalsha:calls=10,usec=300,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_hset:calls=10,usec=20,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_get:calls=5,usec=5,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n";
  const std::string after =
      "# Commandstats\r\n"
      "cmdstat_evalsha:calls=14,usec=420,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_hset:calls=13,usec=26,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_get:calls=9,usec=9,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_subscribe:calls=1,usec=3,usec_per_call=3.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_client|info:calls=2,usec=8,usec_per_call=4.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_client|kill:calls=1,usec=2,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n"
      "cmdstat_info:calls=2,usec=90,usec_per_call=45.00,rejected_calls=0,failed_calls=0\r\n";
  const command_counts delta = command_delta(parse_commandstats(before), parse_commandstats(after));
  // 4 scripts, 1 subscribe, 2 CLIENT INFO at connect, 1 CLIENT KILL ahead of a resend; not the
  // scripts' HSETs, the workload's GETs or the bench's INFOs.
  EXPECT_EQ(client_requests(delta), 4 + 1 + 2 + 1);
  EXPECT_EQ(scripts_run(delta), 4);

  // The server's time in those scripts, not the failed or rejected counts after it.
  const command_counts usec = commandstats_delta(before, after, commandstats_field::usec);
  EXPECT_EQ(scripts_run(usec), 120);
  EXPECT_EQ(usec.at("hset"), 6);
}

TEST(cli_commandstats, reads_whole_field_names_only) {
  // A field that only ends like the one asked for is not it; a line without it is skipped.
  const std::string info =
      "cmdstat_a:rejected_calls=7,calls=3,usec=9,failed_calls=1\r\n"
      "cmdstat_b:rejected_calls=7,failed_calls=1\r\n"
      "cmdstat_c:calls=x,usec=2\r\n"
      "used_cpu_sys:1.0\r\n";
  const command_counts calls = parse_commandstats(info);
  EXPECT_EQ(calls.size(), 1U);
  EXPECT_EQ(calls.at("a"), 3);
  const command_counts usec = parse_commandstats(info, commandstats_field::usec);
  EXPECT_EQ(usec.size(), 2U);
  EXPECT_EQ(usec.at("a"), 9);
  EXPECT_EQ(usec.at("c"), 2);
}

}  // namespace
}  // namespace rlock::cli
