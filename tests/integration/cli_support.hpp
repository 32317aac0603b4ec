// SPDX-License-Identifier: BSL-1.0
#pragma once

// Running the built `letterbox` (LETTERBOX_CLI_PATH) as a child process, with its stdout and
// stderr captured in files and a bounded wait, and a real broker to point it at.

#include <letterbox/amqp/transport.hpp>
#include <letterbox/delivery.hpp>
#include <letterbox/message.hpp>
#include <letterbox/testing/temp_directory.hpp>
#include <letterbox/topology/queue.hpp>
#include <letterbox/topology/queue_arguments.hpp>

#include "amqp_broker.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace cli_test {

using namespace std::chrono_literals;

/// What one run of the tool produced.
struct run_result {
    int status = -1;
    std::string out;
    std::string err;
};

inline std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Runs `letterbox args...` with the environment of this process, changed by `env` (an empty
/// value removes the variable), and waits at most `timeout` for it (killing it after that, which
/// fails the test). stdin is /dev/null, so nothing interactive can wait.
inline run_result run_cli(const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env = {},
                          std::chrono::seconds timeout = 90s) {
    letterbox::testing::temp_directory dir;
    const auto out_path = (dir.path() / "stdout").string();
    const auto err_path = (dir.path() / "stderr").string();

    std::vector<std::string> argv_text{LETTERBOX_CLI_PATH};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry(*e);
        const auto name = entry.substr(0, entry.find('='));
        if (env.find(name) == env.end())
            env_text.push_back(entry);
    }
    for (const auto& [name, value] : env)
        if (!value.empty())
            env_text.push_back(name + "=" + value);
    std::vector<char*> envp;
    for (auto& e : env_text)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    REQUIRE(posix_spawn_file_actions_init(&actions) == 0);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);

    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int wstatus = 0;
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
        const pid_t r = waitpid(pid, &wstatus, WNOHANG);
        if (r == pid) {
            exited = true;
            break;
        }
        std::this_thread::sleep_for(20ms); // polling the child's exit, bounded by the deadline
    }
    if (!exited) {
        kill(pid, SIGKILL); // our own child
        waitpid(pid, &wstatus, 0);
    }
    run_result r;
    r.out = read_file(out_path);
    r.err = read_file(err_path);
    INFO("letterbox stdout:\n" << r.out << "\nstderr:\n" << r.err);
    REQUIRE(exited);
    REQUIRE(WIFEXITED(wstatus));
    r.status = WEXITSTATUS(wstatus);
    return r;
}

/// A connection of the test itself to the broker: to set up queues and check what the tool
/// did.
struct broker : amqp_test::amqp_transport_fixture {
    letterbox::amqp::transport transport = make();
    std::string url = amqp_test::broker_url();

    std::error_code await(const std::function<void(std::function<void(std::error_code)>)>& op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        REQUIRE(run_until([&] { return result.has_value(); }, 20s));
        return *result;
    }

    /// A durable queue that the broker forgets ten minutes after its last use.
    void declare(const std::string& name, letterbox::topology::queue_arguments args = {}) {
        args.expires = 10min;
        letterbox::topology::queue q;
        q.name = name;
        q.arguments = args.to_table();
        REQUIRE_FALSE(await([&](auto h) { transport.async_declare(q, h); }));
    }

    void publish(const letterbox::message& m) {
        REQUIRE_FALSE(await([&](auto h) { transport.async_publish(m, h); }));
    }

    /// The depth of `queue`, or the error of reading it.
    std::pair<std::error_code, std::uint32_t> depth(const std::string& queue) {
        std::optional<std::pair<std::error_code, std::uint32_t>> result;
        transport.async_queue_depth(
            queue, [&result](std::error_code ec, std::uint32_t n) { result.emplace(ec, n); });
        REQUIRE(run_until([&] { return result.has_value(); }, 20s));
        return *result;
    }

    /// Waits (bounded) until `queue` holds `n` ready messages.
    bool wait_depth(const std::string& queue, std::uint32_t n) {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < deadline) {
            const auto [ec, ready] = depth(queue);
            if (!ec && ready == n)
                return true;
            run_until([] { return false; }, 50ms);
        }
        return false;
    }

    /// Takes every ready message of `queue` (acking them), in order.
    std::vector<letterbox::message> drain(const std::string& queue) {
        std::vector<letterbox::message> out;
        for (int i = 0; i < 10'000; ++i) {
            std::optional<std::pair<std::error_code, std::optional<letterbox::delivery>>> got;
            transport.async_get(queue,
                                [&got](std::error_code ec, std::optional<letterbox::delivery> d) {
                                    got.emplace(ec, std::move(d));
                                });
            REQUIRE(run_until([&] { return got.has_value(); }, 20s));
            REQUIRE_FALSE(got->first);
            if (!got->second)
                break;
            REQUIRE_FALSE(await([&](auto h) { transport.async_ack(*got->second, h); }));
            out.push_back(std::move(got->second->msg));
        }
        return out;
    }
};

} // namespace cli_test
