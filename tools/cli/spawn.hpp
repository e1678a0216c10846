// spawn.hpp: starting processes for rlock (the user's command under `exec`, demo workers) and
// reading their exit status the way a shell reports it.
//
// Guarantees of spawn_process():
//  - posix_spawn (thread-safe: rlock::client runs I/O threads), with a PATH search when
//    `argv[0]` has no '/'.
//  - The child starts with an empty signal mask and the default action for the signals rlock
//    blocks or ignores (INT, TERM, HUP, QUIT, CHLD, PIPE, USR1, USR2, ALRM), whatever rlock's own
//    settings; it stays in rlock's process group (so it keeps the terminal).
//  - The child's environment is rlock's, with each "NAME=value" of `set_env` replacing a
//    variable of the same name, and each bare "NAME" removing it.
//  - `fd_map` lists (from, to) pairs to dup2 in the child; every other descriptor of rlock is
//    close-on-exec and is not inherited.
//  - An executable file that is not a binary and has no #! line is run with /bin/sh, as
//    execvp(3) does.
//  - On failure returns -1 and sets *error to the errno value (ENOENT: not found; EACCES:
//    not executable); no process is left behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace rlock::cli {

pid_t spawn_process(const std::vector<std::string>& argv, const std::vector<std::string>& set_env,
                    const std::vector<std::pair<int, int>>& fd_map, int* error);

/// The status a shell reports for a waitpid() status: the exit code, or 128 + N for death by
/// signal N.
int shell_status(int wait_status) noexcept;

}  // namespace rlock::cli
