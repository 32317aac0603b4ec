// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/severity.hpp>
#include <letterbox/ops/readiness.hpp>

#include <cstddef>
#include <exception>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::ops {

/// A readiness check over the topology lint (docs/topology-lint.md): at each probe it calls
/// `findings`, and fails while they hold an error; warnings leave it ready and are named in the
/// detail, so `GET /health/ready` says when the pipeline relies on something the broker's
/// version changes. Detail: "no findings", "2 notes", or the counts and each error and warning
/// as `LB-XDEATH-CLIENT (consumer of 'orders')`; a `findings` that throws fails the check with
/// its message.
///
/// `findings` runs on the server's strand at each probe, so it must be quick: the lint of a
/// declared topology, never a round trip to a broker. Computing it at each probe is what lets
/// it follow the broker's version, which the AMQP transport learns again at each connection:
///
///     server.add_readiness_check("topology", letterbox::ops::topology_lint_check([&] {
///         const auto b = transport.broker();
///         return letterbox::lint::check_topology(
///             declared, b ? b->profile : letterbox::in_memory::broker_profile::rabbitmq_3_10(),
///             consumers);
///     }));
inline std::function<readiness()>
topology_lint_check(std::function<std::vector<lint::finding>()> findings) {
    return [findings = std::move(findings)] {
        std::vector<lint::finding> found;
        try {
            found = findings();
        } catch (const std::exception& e) {
            return readiness{false, std::string("the topology check failed: ") + e.what()};
        }
        std::size_t errors = 0;
        std::size_t warnings = 0;
        std::size_t notes = 0;
        std::string named;
        for (const auto& f : found) {
            if (f.level == lint::severity::info) {
                ++notes;
                continue;
            }
            ++(f.level == lint::severity::error ? errors : warnings);
            std::string objects;
            for (const auto& o : f.objects)
                objects += (objects.empty() ? "" : ", ") + o;
            named += (named.empty() ? "" : "; ") + f.code + " (" + objects + ")";
        }
        const auto counted = [](std::size_t n, const char* what) {
            return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
        };
        if (errors == 0 && warnings == 0)
            return readiness{true, notes == 0 ? "no findings" : counted(notes, "note")};
        return readiness{errors == 0, counted(errors, "error") + ", " +
                                          counted(warnings, "warning") + ": " + named};
    };
}

} // namespace letterbox::ops
