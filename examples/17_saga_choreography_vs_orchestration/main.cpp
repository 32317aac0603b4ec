// SPDX-License-Identifier: BSL-1.0
//
// Example 17: one order flow, choreographed and orchestrated, without and with an e-mail step,
// measured side by side (seed 003, exercise 3). An order reserves stock, then charges the
// payment, then is confirmed. The card of order 2 is declined: its reservation is released, it
// ends FAILED, and it is never confirmed. The e-mail step comes after the payment and before the
// confirmation.
//
//   choreography/: each service reacts to the others' events; no one holds the flow.
//     orders --order-placed--> stock --stock-reserved--> payments --payment-charged--> orders
//                                ^                           |
//                                +------ payment-failed -----+-----------------------> orders
//   orchestration/: the orders service runs a saga, which sends each participant a command and
//   moves on with its reply.
//     orders (saga) --reserve-stock--> stock, --charge-payment--> payments,
//                   --confirm-order--> orders; each replies to the saga
//
// Every service has its own SQLite database with its tables, its outbox and its inbox
// (service.hpp). Each style runs twice, without the e-mail step and with it, each run in a
// simulation of its own: one thread, a virtual clock, the in-memory broker. The program prints
// what became of each order, then a table: the messages per order, the latency per order on the
// virtual clock, and the files and lines that the e-mail step touches, measured from the marks
// in choreography/ and orchestration/ (source_change.hpp); then order 2's causal tree in each
// style. It checks the outcomes, and that email_step.*.diff and the README show the change as
// the sources have it, and exits non-zero with `MISMATCH: ...` on stderr when one is wrong.
//
// Needs: the sqlite and testing components (testing for the simulation); in-memory model only.
// Run it from this folder, where it finds the sources it measures:
//   cd examples/17_saga_choreography_vs_orchestration
//   ../../build/release/examples/example_17_saga_choreography_vs_orchestration [--write-diffs]
// (--write-diffs writes email_step.choreography.diff and email_step.orchestration.diff.)
#include <letterbox/letterbox.hpp>
#include <letterbox/sqlite.hpp>
#include <letterbox/testing/simulation.hpp>

#include "choreography/deployment.hpp"
#include "orchestration/deployment.hpp"
#include "source_change.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace example;

int failures = 0;
void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

// What became of one order, read from the services' databases.
struct order_state {
    std::string status; // pending, confirmed or FAILED
    std::string reason;
    std::int64_t reserved = 0, charged = 0, emailed = 0, confirmed = 0;
    bool ended = false; // confirmed, or FAILED with nothing left reserved
};

template <class Deployment>
order_state effects(Deployment& d, int id) {
    const auto of = " WHERE order_id = " + std::to_string(id);
    order_state s;
    s.reserved = d.stock.number("SELECT COUNT(*) FROM reservations" + of);
    s.charged = d.payments.number("SELECT COUNT(*) FROM charges" + of);
    s.emailed = d.email ? d.email->number("SELECT COUNT(*) FROM emails" + of) : 0;
    s.confirmed = d.orders.number(
        "SELECT COUNT(*) FROM orders WHERE status = 'confirmed' AND id = " + std::to_string(id));
    return s;
}

order_state observe(choreography::deployment& d, int id) {
    auto s = effects(d, id);
    const auto row = " FROM orders WHERE id = " + std::to_string(id);
    s.status = d.orders.text("SELECT status" + row);
    s.reason = d.orders.text("SELECT COALESCE(reason, '')" + row);
    s.ended = s.status == "confirmed" || (s.status == "FAILED" && s.reserved == 0);
    return s;
}

// In orchestration, an order's status is its saga's.
order_state observe(orchestration::deployment& d, int id) {
    auto s = effects(d, id);
    const auto saga = d.orders.saga(id);
    s.ended = saga && saga->finished;
    s.status = !s.ended ? "pending" : saga->state == "completed" ? "confirmed" : "FAILED";
    s.reason = saga ? saga->reason : "";
    return s;
}

// A message in a causal tree: its type, a saga reply's outcome, and a failure's reason (a saga
// reply's header, or an event's `reason`).
std::string label(const lb::message& m) {
    std::string text = m.type;
    if (const auto outcome = m.headers.get<std::string>(lb::headers::saga_outcome))
        text += ": " + *outcome;
    auto reason = m.headers.get<std::string>(lb::headers::saga_reason);
    const auto body = nlohmann::json::parse(m.body, nullptr, false);
    if (!reason && body.is_object() && body.contains("reason"))
        reason = body["reason"].get<std::string>();
    return reason ? text + " (" + *reason + ")" : text;
}

// One order of one run.
struct order_run {
    order_state state;
    ms latency{};
    std::size_t messages = 0; // published for it: its conversation's
    std::string tree;         // its causal tree
};

struct order_to_place {
    int id;
    const char* sku;
};
constexpr order_to_place orders_to_place[] = {{1, "book"}, {2, "lamp"}};

// Runs one style, with or without the e-mail step, in a world of its own; places the orders one
// after the other, each once the one before has ended.
template <class Deployment>
std::vector<order_run> run(const char* style, const std::filesystem::path& dir, bool email) {
    email_step = email;
    std::filesystem::create_directories(dir);
    world w(dir);
    Deployment d(w);
    start(w);
    std::printf("%s, %s the e-mail step\n", style, email ? "with" : "without");
    std::vector<order_run> runs;
    for (const auto& o : orders_to_place) {
        order_run r;
        const auto placed_at = w.sim.clock().now();
        const auto conversation = d.orders.place(o.id, o.sku);
        check(w.sim.drive_until([&] { return observe(d, o.id).ended; }),
              std::string(style) + ": order " + std::to_string(o.id) + " ends");
        r.latency = std::chrono::duration_cast<ms>(w.sim.clock().now() - placed_at);
        w.sim.run_ready(); // the relays publish what the last step sent
        r.state = observe(d, o.id);
        std::set<std::string> published;
        for (const auto& m : w.history)
            if (m.headers.get<std::string>(lb::headers::conversation_id) == conversation)
                published.insert(lb::to_string(m.id));
        r.messages = published.size();
        r.tree = lb::to_text(lb::causal_tree(w.history, conversation), label);
        const auto& s = r.state;
        std::printf("  order %d: %s%s%s%s; stock reserved %lld, payment charged %lld, e-mail sent "
                    "%lld, order confirmed %lld\n",
                    o.id, s.status.c_str(), s.reason.empty() ? "" : " (", s.reason.c_str(),
                    s.reason.empty() ? "" : ")", static_cast<long long>(s.reserved),
                    static_cast<long long>(s.charged), static_cast<long long>(s.emailed),
                    static_cast<long long>(s.confirmed));
        runs.push_back(std::move(r));
    }
    stop(w);

    const auto& one = runs[0].state;
    const auto& two = runs[1].state;
    const std::string in = std::string(style) + (email ? " with e-mail" : "") + ": ";
    check(one.status == "confirmed" && one.reserved == 1 && one.charged == 1 &&
              one.emailed == (email ? 1 : 0) && one.confirmed == 1,
          in + "order 1 is reserved, charged, e-mailed with the step, and confirmed");
    check(two.status == "FAILED" && two.reserved == 0 && two.charged == 0 && two.emailed == 0 &&
              two.confirmed == 0,
          in + "order 2 FAILED: released, not charged, not e-mailed, never confirmed");
    return runs;
}

// The change that the e-mail step makes to `style`'s sources, or nothing when they are not in
// the current folder. Checks (or, with `write`, writes) email_step.<style>.diff, and checks that
// the README shows it.
std::optional<change_measure> change_in(const std::string& style, bool write) {
    const auto files = read_sources(style);
    if (files.empty())
        return std::nullopt;
    const auto diff = unified_diff(files);
    const auto path = "email_step." + style + ".diff";
    if (write)
        std::ofstream(path, std::ios::binary) << diff;
    check(file_text(path) == diff, path + " is the change in " + style + "/ (--write-diffs)");
    check(file_text("README.md").find("```diff\n" + diff + "```") != std::string::npos,
          "README.md shows " + path);
    return measure(files);
}

// One style: its runs without and with the e-mail step, and the change the step makes to its
// sources.
struct style_result {
    std::vector<order_run> without, with;
    std::optional<change_measure> change;
};

template <class Deployment>
style_result run_style(const char* style, const std::filesystem::path& dir, bool write_diffs) {
    style_result r{run<Deployment>(style, dir / style / "without", false),
                   run<Deployment>(style, dir / style / "with", true),
                   change_in(style, write_diffs)};
    check(r.without[1].tree == r.with[1].tree,
          std::string(style) + ": order 2 fails before the e-mail step, with the same tree");
    return r;
}

void print_table(const style_result& c, const style_result& o) {
    const auto row = [](const char* what, const std::string& a, const std::string& b) {
        std::printf("%-34s%-22s%s\n", what, a.c_str(), b.c_str());
    };
    const auto messages = [](const std::vector<order_run>& r) {
        return std::to_string(r[0].messages) + ", " + std::to_string(r[1].messages);
    };
    const auto latency = [](const std::vector<order_run>& r) {
        return std::to_string(r[0].latency.count()) + ", " + std::to_string(r[1].latency.count()) +
               " ms";
    };
    const auto files = [](const style_result& r) {
        return r.change ? std::to_string(r.change->files) + " (" +
                              std::to_string(r.change->new_files) + " new)"
                        : std::string("?");
    };
    const auto lines = [](const style_result& r) {
        return r.change ? "+" + std::to_string(r.change->added) + ", -" +
                              std::to_string(r.change->removed)
                        : std::string("?");
    };
    row("", "choreography", "orchestration");
    row("messages per order (1, 2)", messages(c.without), messages(o.without));
    row("  with the e-mail step", messages(c.with), messages(o.with));
    row("latency per order (1, 2)", latency(c.without), latency(o.without));
    row("  with the e-mail step", latency(c.with), latency(o.with));
    row("files the e-mail step touches", files(c), files(o));
    row("lines it adds, removes", lines(c), lines(o));
    row("where the flow's logic lives", "in each service", "in order_saga.hpp");
    if (!c.change || !o.change)
        std::printf("(?: the sources are not in the current folder; run it from "
                    "examples/17_saga_choreography_vs_orchestration to measure them)\n");
}

void print_tree(const char* style, const std::string& tree) {
    std::printf("order 2's causal tree, %s:\n", style);
    for (std::size_t at = 0, end; at < tree.size(); at = end + 1) {
        end = tree.find('\n', at);
        std::printf("  %s\n", tree.substr(at, end - at).c_str());
    }
}

} // namespace

int main(int argc, char** argv) {
    const bool write_diffs = argc == 2 && std::string_view(argv[1]) == "--write-diffs";
    if (argc > 1 && !write_diffs) {
        std::fprintf(stderr, "usage: %s [--write-diffs]\n", argv[0]);
        return 2;
    }
    const auto dir = std::filesystem::temp_directory_path() /
                     ("letterbox-example-17-" + lb::to_string(lb::message_id_generator{}()));
    try {
        std::printf("Each service works a fixed time on each message, on a virtual clock: stock "
                    "%lld ms, payment %lld ms, e-mail %lld ms, orders %lld ms, orchestrator %lld "
                    "ms.\n",
                    static_cast<long long>(work_time::stock.count()),
                    static_cast<long long>(work_time::payment.count()),
                    static_cast<long long>(work_time::email.count()),
                    static_cast<long long>(work_time::orders.count()),
                    static_cast<long long>(work_time::orchestrator.count()));
        const auto c = run_style<choreography::deployment>("choreography", dir, write_diffs);
        const auto o = run_style<orchestration::deployment>("orchestration", dir, write_diffs);
        std::printf("\n");
        print_table(c, o);
        std::printf("\n");
        print_tree("choreography", c.with[1].tree);
        print_tree("orchestration", o.with[1].tree);
    } catch (const std::exception& e) {
        check(false, e.what());
    }
    std::filesystem::remove_all(dir);
    return failures == 0 ? 0 : 1;
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   ^Each service works a fixed time on each message, on a virtual clock
//   choreography, without the e-mail step
//   order 1: confirmed; stock reserved 1, payment charged 1, e-mail sent 0, order confirmed 1
//   order 2: FAILED \(card declined\); stock reserved 0, payment charged 0, e-mail sent 0, order confirmed 0
//   choreography, with the e-mail step
//   order 1: confirmed; stock reserved 1, payment charged 1, e-mail sent 1, order confirmed 1
//   order 2: FAILED \(card declined\); stock reserved 0, payment charged 0, e-mail sent 0, order confirmed 0
//   orchestration, without the e-mail step
//   order 1: confirmed; stock reserved 1, payment charged 1, e-mail sent 0, order confirmed 1
//   order 2: FAILED \(step 'charge-payment' failed: card declined\); stock reserved 0, payment charged 0, e-mail sent 0, order confirmed 0
//   orchestration, with the e-mail step
//   order 1: confirmed; stock reserved 1, payment charged 1, e-mail sent 1, order confirmed 1
//   order 2: FAILED \(step 'charge-payment' failed: card declined\); stock reserved 0, payment charged 0, e-mail sent 0, order confirmed 0
//   choreography +orchestration
//   messages per order \(1, 2\) +4, 5 +6, 6
//   with the e-mail step +5, 5 +8, 6
//   latency per order \(1, 2\) +180, 190 ms +195, 205 ms
//   with the e-mail step +260, 190 ms +280, 205 ms
//   files the e-mail step touches +4 \(1 new\) +3 \(1 new\)
//   lines it adds, removes +\+[0-9]+, -1 +\+[0-9]+, -0
//   where the flow's logic lives +in each service +in order_saga.hpp
//   order 2's causal tree, choreography:
//   order-placed
//   stock-reserved
//   payment-failed \(card declined\)
//   order-failed \(card declined\)
//   stock-released
//   order 2's causal tree, orchestration:
//   reserve-stock
//   reserve-stock.reply: success
//   charge-payment
//   charge-payment.reply: failure \(card declined\)
//   release-stock
//   release-stock.reply: success
