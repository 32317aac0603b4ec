// SPDX-License-Identifier: BSL-1.0
//
// Example 08: the transactional outbox under `kill -9`, between the commit and the publish.
//
// The seeds' exercise: write the business row and its event in one transaction, kill the
// process with SIGKILL after the commit and before the publish, and check that on restart the
// relay publishes every pending event, that none is lost, and that none is applied twice.
//
// Two kinds of process:
//   - the order service, a child process (this program run again with `--child`): it commits
//     orders, each with its `order.placed` event in the SQLite outbox, in one transaction.
//     After each commit it tells the parent through a pipe, at the very point where it would
//     wake its relay to publish, and waits. The parent answers "go on", or sends SIGKILL.
//   - the parent: it kills the child, then plays the restarted service: it opens the order
//     database again, counts what is pending, and runs a new outbox relay until everything is
//     published. The broker (the in-memory model) and the shipping service, a consumer with a
//     SQLite inbox, live in the parent for the whole run, as a broker and a consumer that
//     never died would.
//
// Five rounds, five kills. In round 5 the kill lands inside an open transaction instead, which
// leaves no order and no event behind. In rounds 2 and 4 the restarted relay also loses a
// publisher confirm (its connection drops after the broker stored the message), so it
// publishes that event again: the inbox absorbs the copy. At the end every committed event has
// exactly one effect.
//
// Needs: the `sqlite` component (letterbox::sqlite), Linux (fork, exec, prctl). Runs in real
// time, in about a second. Its files live in a mkdtemp directory that it removes.
// Run: build/<dir>/examples/example_08_outbox_under_kill9
#include <letterbox/sqlite.hpp>

#include <letterbox/letterbox.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace asio = boost::asio;
using namespace letterbox;
using namespace std::chrono_literals;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

std::int64_t scalar(sqlite::database& db, const char* sql) {
    auto uow = db.begin();
    std::error_code ec;
    auto st = uow.connection().prepare(sql, ec);
    return !ec && st->step(ec) ? st->column_int64(0) : -1;
}

// ---- the child: the order service ----------------------------------------------------------

// Tells the parent where the service is (`committed 12`, `open 13`) and waits for its answer:
// a byte to go on. The parent kills instead at the chosen point. A child nobody answers gives up
// after 30 s (the parent died, or has a bug): every wait has a deadline.
void checkpoint(int report_fd, int go_fd, const char* where, std::int64_t order) {
    const std::string line = std::string(where) + " " + std::to_string(order) + "\n";
    if (::write(report_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
        std::_Exit(4);
    pollfd p{go_fd, POLLIN, 0};
    char go = 0;
    if (::poll(&p, 1, 30'000) != 1 || ::read(go_fd, &go, 1) != 1)
        std::_Exit(3);
}

//[child_order_service
// Places orders `first` .. `first + count - 1`, each with its event, in one transaction each.
// With `open_next`, it then begins the transaction of the next order and stops before its commit.
int run_order_service(const std::string& path, std::int64_t first, std::int64_t count,
                      bool open_next, int report_fd, int go_fd) {
    auto db = sqlite::database::open(path);
    sqlite::outbox_store outbox(db);
    message_id_generator ids;
    auto write_order = [&](sqlite::unit_of_work& uow, std::int64_t order) {
        std::error_code ec;
        auto st = uow.connection().prepare("INSERT INTO orders(id, item) VALUES (?1, 'book')", ec);
        if (ec || st->execute())
            std::_Exit(5);
        outbox_entry event;
        event.msg = make_message(ids, "order.placed", "orders", "order.placed",
                                 nlohmann::json{{"order", order}});
        event.aggregate_type = "order";
        event.aggregate_id = std::to_string(order);
        if (outbox.add(uow, event, std::chrono::system_clock::now()))
            std::_Exit(6);
    };
    for (std::int64_t order = first; order < first + count; ++order) {
        auto uow = db.begin(); // BEGIN IMMEDIATE
        write_order(uow, order);
        if (uow.commit())
            std::_Exit(7);
        // Committed: the order and its event are durable. This is where the service would wake
        // its relay (`uow.on_commit(relay.waker())`) to publish the event. The kill lands here.
        checkpoint(report_fd, go_fd, "committed", order);
    }
    if (open_next) {
        auto uow = db.begin();
        write_order(uow, first + count);
        checkpoint(report_fd, go_fd, "open", first + count); // killed before the commit
    }
    return 0;
}
//]

// ---- the parent: starting, answering and killing the child ----------------------------------

class order_service_process {
public:
    // Starts this program again as `<self> --child <db> <first> <count> <open_next> <fds>`.
    order_service_process(const std::string& db, std::int64_t first, std::int64_t count,
                          bool open_next) {
        int report[2];
        int go[2];
        if (::pipe2(report, O_CLOEXEC) != 0)
            throw std::system_error(errno, std::generic_category(), "pipe2");
        if (::pipe2(go, O_CLOEXEC) != 0) {
            const int e = errno;
            ::close(report[0]);
            ::close(report[1]);
            throw std::system_error(e, std::generic_category(), "pipe2");
        }
        // Everything the child needs is built before fork: between fork and exec only
        // async-signal-safe calls are allowed.
        std::vector<std::string> args{"/proc/self/exe",
                                      "--child",
                                      db,
                                      std::to_string(first),
                                      std::to_string(count),
                                      open_next ? "1" : "0",
                                      std::to_string(report[1]),
                                      std::to_string(go[0])};
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ == 0) {
            // Die with the parent; keep the child's ends of the pipes across exec.
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
                ::_exit(120);
            if (::fcntl(report[1], F_SETFD, 0) != 0 || ::fcntl(go[0], F_SETFD, 0) != 0)
                ::_exit(121);
            ::execv(argv[0], argv.data());
            ::_exit(122);
        }
        const int fork_errno = errno;
        ::close(report[1]);
        ::close(go[0]);
        if (pid_ < 0) {
            ::close(report[0]);
            ::close(go[1]);
            throw std::system_error(fork_errno, std::generic_category(), "fork");
        }
        report_ = report[0];
        go_ = go[1];
    }

    order_service_process(const order_service_process&) = delete;
    order_service_process& operator=(const order_service_process&) = delete;

    ~order_service_process() {
        if (!reaped_)
            kill9();
        ::close(report_);
        ::close(go_);
    }

    // The child's next report line, or nothing if it did not send one within 10 s.
    std::optional<std::string> next_report() {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (true) {
            if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
                auto line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return line;
            }
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd p{report_, POLLIN, 0};
            if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) != 1)
                return std::nullopt;
            char chunk[256];
            const auto n = ::read(report_, chunk, sizeof chunk);
            if (n <= 0)
                return std::nullopt; // the child is gone
            buffer_.append(chunk, static_cast<std::size_t>(n));
        }
    }

    bool go_on() { return ::write(go_, "g", 1) == 1; }

    // SIGKILL, then reap: whether it died of that signal. SIGKILL cannot be caught or ignored,
    // so the wait is short; it still has a deadline.
    bool kill9() {
        ::kill(pid_, SIGKILL);
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        int status = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            const pid_t r = ::waitpid(pid_, &status, WNOHANG);
            if (r == pid_) {
                reaped_ = true;
                return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
            }
            if (r < 0)
                break;
            ::usleep(1000);
        }
        reaped_ = true; // not ours any more, or a bug: do not try again
        return false;
    }

private:
    pid_t pid_ = -1;
    int report_ = -1;
    int go_ = -1;
    bool reaped_ = false;
    std::string buffer_;
};

// A temporary directory (mkdtemp), removed with everything in it.
class temp_directory {
public:
    temp_directory() {
        auto pattern =
            (std::filesystem::temp_directory_path() / "letterbox-example-08-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        path_ = pattern;
    }
    temp_directory(const temp_directory&) = delete;
    temp_directory& operator=(const temp_directory&) = delete;
    ~temp_directory() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string file(const char* name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

// The parent's event loop: runs handlers for up to `limit` of real time, until `done()`.
class event_loop {
public:
    bool run_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
        auto work = asio::make_work_guard(io_); // so that run_one_for waits instead of spinning
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            io_.restart();
            io_.run_one_for(5ms);
        }
        return done();
    }
    template <class Op>
    std::error_code await(Op op) {
        std::optional<std::error_code> result;
        op([&result](std::error_code ec) { result = ec; });
        run_until([&] { return result.has_value(); });
        return result.value_or(make_error_code(errc::timed_out));
    }
    asio::io_context::executor_type executor() { return io_.get_executor(); }

private:
    asio::io_context io_;
};

// What the parent does in one round.
struct round_plan {
    std::int64_t orders;   // orders the child commits before the kill
    bool kill_inside_next; // the kill lands in the next order's open transaction instead
    bool lose_a_confirm;   // the restarted relay's connection drops after a stored publish
};

const std::vector<round_plan> plan = {
    {4, false, false}, {7, false, true}, {3, false, false}, {6, false, true}, {5, true, false}};

using relay_type = outbox_relay<sqlite::outbox_store, in_memory::transport, steady_clock>;

int run_parent() {
    // A child that died early closes its end of the "go on" pipe: writing to it must fail with
    // EPIPE, not kill the parent.
    ::signal(SIGPIPE, SIG_IGN);
    temp_directory dir;
    const auto orders_db = dir.file("orders.db");
    {
        auto db = sqlite::database::open(orders_db); // creates the outbox schema
        auto uow = db.begin();
        const auto failed = uow.connection().exec(
            "CREATE TABLE orders(id INTEGER PRIMARY KEY, item TEXT NOT NULL)");
        check(!failed && !uow.commit(), "create the orders table");
    }

    // The broker and the shipping service: they never die in this story.
    event_loop loop;
    steady_clock clock;
    in_memory::broker broker(loop.executor(), clock);
    in_memory::transport shipping_transport(broker, "shipping-service");
    const topology::exchange orders{.name = "orders", .type = topology::exchange_type::topic};
    const topology::queue shipping_queue{.name = "shipping.orders"};
    check(!loop.await([&](auto h) { shipping_transport.async_declare(orders, h); }) &&
              !loop.await([&](auto h) { shipping_transport.async_declare(shipping_queue, h); }) &&
              !loop.await([&](auto h) {
                  shipping_transport.async_bind({"orders", "shipping.orders", "order.#"}, h);
              }),
          "declare the topology");

    auto shipping_db = sqlite::database::open(dir.file("shipping.db"));
    {
        auto uow = shipping_db.begin();
        // No unique constraint on purpose: a second effect of one message would be a second row.
        const auto failed = uow.connection().exec(
            "CREATE TABLE shipments(message_id TEXT NOT NULL, order_id INTEGER NOT NULL)");
        check(!failed && !uow.commit(), "create the shipments table");
    }
    sqlite::inbox_store inbox(shipping_db);
    //[shipping_consumer
    auto ship = [](const message& m, sqlite::unit_of_work& uow) {
        const auto event = decode_payload<nlohmann::json>(m);
        std::error_code ec;
        auto st = uow.connection().prepare(
            "INSERT INTO shipments(message_id, order_id) VALUES (?1, ?2)", ec);
        if (ec)
            throw letterbox::error(ec, "prepare");
        st->bind_text(1, letterbox::to_string(m.id));
        st->bind_int64(2, event.at("order").get<std::int64_t>());
        if (auto failed = st->execute())
            throw letterbox::error(failed, "insert shipment");
    };
    auto shipping = idempotent(
        ship, inbox, [&] { return shipping_db.begin(); }, "shipping", clock);
    consumer shipping_consumer(shipping_transport, shipping, clock,
                               {.consume = {.queue = "shipping.orders"}});
    //]
    std::optional<std::error_code> started;
    shipping_consumer.async_start([&](std::error_code ec, std::string) { started = ec; });
    check(loop.run_until([&] { return started.has_value(); }) && !*started,
          "start the shipping consumer");
    auto shipments = [&] {
        return static_cast<std::size_t>(scalar(shipping_db, "SELECT COUNT(*) FROM shipments"));
    };

    std::int64_t next_order = 1;
    std::size_t committed = 0;
    std::uint64_t published = 0;
    std::uint64_t publishes_sent = 0;
    for (std::size_t r = 0; r < plan.size(); ++r) {
        const auto& p = plan[r];
        const std::int64_t first = next_order;
        const std::int64_t last = first + p.orders - 1;

        // --- the order service runs, and is killed ---------------------------------------------
        bool killed = false;
        {
            order_service_process child(orders_db, first, p.orders, p.kill_inside_next);
            const std::string kill_at = p.kill_inside_next ? "open " + std::to_string(last + 1)
                                                           : "committed " + std::to_string(last);
            for (std::int64_t step = 0; step <= p.orders; ++step) {
                const auto line = child.next_report();
                if (!line) {
                    check(false, "round " + std::to_string(r + 1) + ": the child went silent");
                    break;
                }
                if (*line == kill_at) {
                    killed = child.kill9();
                    break;
                }
                if (!child.go_on())
                    break;
            }
        }
        check(killed, "round " + std::to_string(r + 1) + ": the child died of SIGKILL");
        committed += static_cast<std::size_t>(p.orders);
        next_order = last + 1;
        if (p.kill_inside_next)
            std::printf("round %zu: the order service committed orders %lld-%lld, then was killed "
                        "(SIGKILL) inside the transaction of order %lld\n",
                        r + 1, static_cast<long long>(first), static_cast<long long>(last),
                        static_cast<long long>(last + 1));
        else
            std::printf("round %zu: the order service committed orders %lld-%lld and was killed "
                        "(SIGKILL) right after the last commit, before the publish\n",
                        r + 1, static_cast<long long>(first), static_cast<long long>(last));

        // --- the restart: a new process opens the database and runs a new relay ----------------
        //[restart
        auto db = sqlite::database::open(orders_db); // recovers what the killed writer left
        sqlite::outbox_store outbox(db);
        std::error_code ec;
        const auto at_restart = outbox.stats(clock.wall_now(), ec);
        const auto orders_in_db = scalar(db, "SELECT COUNT(*) FROM orders");
        in_memory::transport transport(broker, "order-service");
        relay_options options;
        options.transport_retry = {.initial = 20ms, .multiplier = 2.0, .max = 200ms, .jitter = 0.2};
        relay_type relay(outbox, transport, clock, options);
        if (p.lose_a_confirm)
            broker.lose_nth_confirm(2); // stored, but the relay never hears of it
        std::optional<std::error_code> stopped;
        relay.async_run([&](std::error_code e) { stopped = e; });
        const bool drained = loop.run_until([&] {
            std::error_code e;
            const auto queue = broker.queue("shipping.orders");
            return outbox.stats(clock.wall_now(), e).pending == 0 && queue && queue->total() == 0 &&
                   shipments() == committed;
        });
        relay.stop();
        loop.run_until([&] { return stopped.has_value(); });
        //]
        check(drained && stopped == std::error_code{},
              "round " + std::to_string(r + 1) + ": the relay drained the outbox and stopped");
        check(!ec && orders_in_db == static_cast<std::int64_t>(committed) &&
                  at_restart.pending == static_cast<std::size_t>(p.orders),
              "round " + std::to_string(r + 1) + ": what the restart found");
        const auto c = relay.counters();
        published += c.published;
        publishes_sent += c.publish_attempts;
        std::printf("  restart: %lld orders in the database, %zu events pending; the relay "
                    "published %llu\n",
                    static_cast<long long>(orders_in_db), at_restart.pending,
                    static_cast<unsigned long long>(c.published));
        if (c.publish_attempts > c.published)
            std::printf("  %llu publishes for %llu events: a confirm was lost (the relay's "
                        "connection dropped after the broker stored the message), so it published "
                        "again\n",
                        static_cast<unsigned long long>(c.publish_attempts),
                        static_cast<unsigned long long>(c.published));
        check((c.publish_attempts > c.published) == p.lose_a_confirm,
              "round " + std::to_string(r + 1) + ": extra publishes only after a lost confirm");
        std::printf("  shipping: %zu shipments in all; copies absorbed by its inbox so far: %llu\n",
                    shipments(), static_cast<unsigned long long>(shipping.stats().duplicates));
        if (p.kill_inside_next) {
            const auto id = std::to_string(last + 1);
            const auto rows = scalar(db, ("SELECT COUNT(*) FROM orders WHERE id = " + id).c_str());
            const auto events = scalar(
                db, ("SELECT COUNT(*) FROM letterbox_outbox WHERE aggregate_id = '" + id + "'")
                        .c_str());
            std::printf("  order %s: %lld rows, %lld events: the open transaction left nothing\n",
                        id.c_str(), static_cast<long long>(rows), static_cast<long long>(events));
            check(rows == 0 && events == 0, "no phantom order or event");
        }
        loop.await([&](auto h) { transport.async_close(h); });
    }

    // --- the tally: effects per message id ---------------------------------------------------
    std::set<std::string> expected; // every event ever committed
    {
        auto db = sqlite::database::open(orders_db);
        auto uow = db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare("SELECT message_id FROM letterbox_outbox", ec);
        while (!ec && st->step(ec))
            expected.emplace(st->column_text(0));
    }
    std::map<std::string, std::int64_t> effects;
    {
        auto uow = shipping_db.begin();
        std::error_code ec;
        auto st = uow.connection().prepare(
            "SELECT message_id, COUNT(*) FROM shipments GROUP BY message_id", ec);
        while (!ec && st->step(ec))
            effects[std::string(st->column_text(0))] = st->column_int64(1);
    }
    std::size_t lost = 0;
    std::size_t duplicated = 0;
    std::size_t total_effects = 0;
    for (const auto& id : expected)
        lost += effects.count(id) == 0 ? 1 : 0;
    for (const auto& [id, n] : effects) {
        total_effects += static_cast<std::size_t>(n);
        duplicated += n > 1 ? 1 : 0;
    }
    std::printf("totals: committed %zu, published %llu (%llu publishes sent), effects %zu, "
                "duplicates absorbed %llu, duplicate effects %zu, lost %zu\n",
                committed, static_cast<unsigned long long>(published),
                static_cast<unsigned long long>(publishes_sent), total_effects,
                static_cast<unsigned long long>(shipping.stats().duplicates), duplicated, lost);
    check(expected.size() == committed && published == committed && total_effects == committed &&
              lost == 0 && duplicated == 0 && shipping.stats().duplicates == 2,
          "the totals");

    // The relay never publishes an event twice on purpose: a relay started once more finds
    // nothing to do.
    {
        auto db = sqlite::database::open(orders_db);
        sqlite::outbox_store outbox(db);
        in_memory::transport transport(broker, "order-service");
        relay_type relay(outbox, transport, clock);
        bool stopped = false;
        relay.async_run([&](std::error_code) { stopped = true; });
        loop.run_until([&] { return relay.counters().claims >= 1; });
        relay.stop();
        loop.run_until([&] { return stopped; });
        std::printf("one more restart, without a kill: the relay published %llu\n",
                    static_cast<unsigned long long>(relay.counters().publish_attempts));
        check(relay.counters().claims >= 1 && relay.counters().publish_attempts == 0,
              "nothing published twice");
        loop.await([&](auto h) { transport.async_close(h); });
    }
    loop.await([&](auto h) { shipping_transport.async_close(h); });
    return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    if (argc == 8 && std::string(argv[1]) == "--child")
        return run_order_service(argv[2], std::stoll(argv[3]), std::stoll(argv[4]),
                                 std::string(argv[5]) == "1", std::stoi(argv[6]),
                                 std::stoi(argv[7]));
    try {
        return run_parent();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "MISMATCH: %s\n", e.what());
        return 1;
    }
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   round 1: the order service committed orders 1-4 and was killed \(SIGKILL\) right after
//   restart: 4 orders in the database, 4 events pending; the relay published 4
//   shipping: 4 shipments in all; copies absorbed by its inbox so far: 0
//   round 2: the order service committed orders 5-11 and was killed
//   restart: 11 orders in the database, 7 events pending; the relay published 7
//   8 publishes for 7 events: a confirm was lost
//   shipping: 11 shipments in all; copies absorbed by its inbox so far: 1
//   round 3: the order service committed orders 12-14 and was killed
//   restart: 14 orders in the database, 3 events pending; the relay published 3
//   shipping: 14 shipments in all; copies absorbed by its inbox so far: 1
//   round 4: the order service committed orders 15-20 and was killed
//   restart: 20 orders in the database, 6 events pending; the relay published 6
//   7 publishes for 6 events: a confirm was lost
//   shipping: 20 shipments in all; copies absorbed by its inbox so far: 2
//   round 5: the order service committed orders 21-25, then was killed \(SIGKILL\) inside
//   the transaction of order 26
//   restart: 25 orders in the database, 5 events pending; the relay published 5
//   shipping: 25 shipments in all; copies absorbed by its inbox so far: 2
//   order 26: 0 rows, 0 events: the open transaction left nothing
//   totals: committed 25, published 25 \(27 publishes sent\), effects 25
//   duplicates absorbed 2, duplicate effects 0, lost 0
//   one more restart, without a kill: the relay published 0
