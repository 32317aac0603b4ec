// SPDX-License-Identifier: BSL-1.0
//
// Example 20: many instances of one service, on PostgreSQL and RabbitMQ.
//
// An order service runs as two instances, and two relays publish its outbox, each in a process
// of its own, all on one PostgreSQL database (LETTERBOX_POSTGRES_URL) and one RabbitMQ broker
// (LETTERBOX_AMQP_URL):
//   - each instance places orders, each order and its `order.placed` event in one unit of work
//     (`postgres::unit_of_work`, `postgres::outbox_store::add`). It runs no relay: the commit
//     announces the row (LISTEN/NOTIFY, `outbox_options::notify`);
//   - each relay is an `outbox_relay` over `postgres::outbox_store`, its store calls on a thread
//     of their own (`relay_options::store_executor`), woken by an `outbox_listener` on its I/O
//     thread when any process commits rows. The two claim with `FOR UPDATE SKIP LOCKED`, so they
//     share the rows instead of fighting over them;
//   - the shipping service (this process) consumes the orders with an idempotent effect: the
//     `postgres::inbox_store` record and a `shipments` row in one unit of work.
// Halfway through, relay A is killed with SIGKILL. Relay B goes on, and once the leases of the
// rows A held run out (2 s), it publishes them again: some may reach the consumer twice
// (broker-level duplicates, counted), and the inbox absorbs them. At the end it checks, in the
// database: every order has exactly one shipment (0 lost, 0 duplicate effects).
//
// The processes are this program started again with a role (`--role instance ...`,
// `--role relay ...`); they die with it (PR_SET_PDEATHSIG), and every wait has a deadline.
// Everything lives in a schema of its own (`letterbox_example_20_<random>`), dropped at the end,
// and a queue of its own that the broker forgets 5 minutes after its last use.
//
// Needs: the `postgres` and `amqp` components, Linux (fork, exec, prctl), and both servers:
// without either URL it says what it needs and exits 0 (tests/tools/postgres.sh,
// tests/tools/rabbitmq.sh; docs/testing-with-postgres.md). Takes a few seconds.
// Run, with both servers started for it and stopped after:
//   tests/tools/postgres.sh run -- tests/tools/rabbitmq.sh run --
//   <build>/examples/example_20_many_instances
#include <letterbox/amqp.hpp>
#include <letterbox/letterbox.hpp>
#include <letterbox/postgres.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace asio = boost::asio;
namespace pg = letterbox::postgres;
using namespace letterbox;
using namespace std::chrono_literals;

namespace {

constexpr int instances = 2;
constexpr int orders_per_instance = 100;
constexpr int total_orders = instances * orders_per_instance;

int failures = 0;
void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "MISMATCH: %s\n", what.c_str());
        ++failures;
    }
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

pg::database open_database(const std::string& schema, const std::string& name,
                           std::size_t connections) {
    pg::database_options o;
    o.schema = schema;
    o.application_name = name; // what pg_stat_activity shows
    o.max_connections = connections;
    return pg::database::open(env("LETTERBOX_POSTGRES_URL"), o);
}

// Runs `io` in slices until `done()` or `limit` passed; whether `done()` held.
bool run_until(asio::io_context& io, const std::function<bool()>& done,
               std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(5ms);
    }
    return done();
}

// ---- an instance of the order service --------------------------------------------------------

//[instance
// Places `orders` orders, each with its event, in one unit of work each. No relay runs here:
// the commit announces the row to every relay's listener.
int run_instance(int instance, const std::string& schema, const std::string& queue, int orders) {
    auto db = open_database(schema, "instance-" + std::to_string(instance), 1);
    pg::outbox_store outbox(db); // outbox_options::notify is on by default
    message_id_generator ids;
    const std::string insert =
        "INSERT INTO " + schema + ".orders(instance, order_no, message_id) VALUES ($1, $2, $3)";
    for (int order = 1; order <= orders; ++order) {
        outbox_entry event;
        event.msg = make_message(ids, "order.placed", "", queue,
                                 nlohmann::json{{"instance", instance}, {"order", order}});
        event.aggregate_type = "customer"; // a customer's orders are published in order
        event.aggregate_id = std::to_string(instance) + "-" + std::to_string(order % 7);
        const auto id = letterbox::to_string(event.msg.id);
        std::error_code ec;
        auto uow = db.begin(ec);
        if (!ec)
            (void)uow.connection().exec(insert,
                                        {pg::param(std::int64_t{instance}),
                                         pg::param(std::int64_t{order}), pg::param::text(id)},
                                        ec);
        if (!ec)
            ec = outbox.add(uow, event, std::chrono::system_clock::now());
        if (!ec)
            ec = uow.commit();
        if (ec) {
            std::fprintf(stderr, "instance %d: order %d: %s (%s)\n", instance, order,
                         ec.message().c_str(), db.last_error_message().c_str());
            return 1;
        }
        std::this_thread::sleep_for(10ms); // orders arrive over a few seconds
    }
    return 0;
}
//]

// ---- a relay ----------------------------------------------------------------------------------

//[relay
// Publishes the outbox until SIGTERM, then stops gracefully and writes its counters to `report`.
int run_relay(const std::string& name, const std::string& schema, const std::string& report) {
    auto db = open_database(schema, name, 2);
    pg::outbox_store outbox(db);
    asio::io_context io;
    auto work = asio::make_work_guard(io);
    asio::thread_pool store_thread(1); // PostgreSQL calls block: never on the I/O thread
    steady_clock clock;
    amqp::transport_options to;
    to.connection_name = name;
    amqp::transport transport(io.get_executor(), env("LETTERBOX_AMQP_URL"), to);

    relay_options options;
    options.owner = name; // unique per relay: the lease owner of the rows it claims
    options.store_executor = store_thread.get_executor();
    options.lease = 2s;         // a dead relay's rows are claimable again 2 s after its last claim
    options.poll_interval = 1s; // the fallback; announcements wake it at once
    options.batch_size = 10;
    options.window = 10;
    outbox_relay relay(outbox, transport, clock, options);
    pg::outbox_listener listener(io.get_executor(), db, relay.waker());

    std::optional<std::error_code> finished;
    relay.async_run([&](std::error_code ec) { finished = ec; });
    listener.start();
    asio::signal_set terminate(io, SIGTERM);
    terminate.async_wait([&](const boost::system::error_code& ec, int) {
        if (!ec)
            relay.stop(); // waits for the publishes in flight and marks what was confirmed
    });
    const auto deadline = std::chrono::steady_clock::now() + 90s; // the parent's is shorter
    while (!finished && std::chrono::steady_clock::now() < deadline)
        io.run_for(20ms);
    const auto notifications = listener.notifications();
    listener.stop();
    terminate.cancel();
    store_thread.join();
    bool closed = false;
    transport.async_close([&](std::error_code) { closed = true; });
    run_until(
        io, [&] { return closed; }, 10s);

    const auto c = relay.counters();
    std::ofstream(report) << c.published << ' ' << c.publish_attempts << ' ' << notifications
                          << '\n';
    return finished && !*finished ? 0 : 1;
}
//]

// ---- the parent: starting and killing the processes ------------------------------------------

// This program started again with `args`, its output in `log`. It dies with the parent.
class child_process {
public:
    child_process(const std::vector<std::string>& args, const std::string& log) {
        std::vector<std::string> argv_text{"/proc/self/exe"};
        argv_text.insert(argv_text.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& a : argv_text)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (out < 0)
            throw std::system_error(errno, std::generic_category(), "open " + log);
        // Everything the child needs is built before fork: between fork and exec only
        // async-signal-safe calls are allowed.
        const pid_t parent = ::getpid();
        pid_ = ::fork();
        if (pid_ == 0) {
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)
                ::_exit(120);
            if (::dup2(out, STDOUT_FILENO) < 0 || ::dup2(out, STDERR_FILENO) < 0)
                ::_exit(121);
            ::execv(argv[0], argv.data());
            ::_exit(122);
        }
        const int fork_errno = errno;
        ::close(out);
        if (pid_ < 0)
            throw std::system_error(fork_errno, std::generic_category(), "fork");
    }
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    ~child_process() {
        if (!status_) {
            ::kill(pid_, SIGKILL);
            (void)wait_for(10s);
        }
    }

    // Reaps the child if it exited; its wait status once it did.
    std::optional<int> poll() {
        int status = 0;
        if (!status_ && ::waitpid(pid_, &status, WNOHANG) == pid_)
            status_ = status;
        return status_;
    }
    std::optional<int> wait_for(std::chrono::milliseconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!poll() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(5ms);
        return status_;
    }
    bool exited_ok() { return poll() && WIFEXITED(*status_) && WEXITSTATUS(*status_) == 0; }
    void signal(int sig) {
        if (!poll())
            ::kill(pid_, sig);
    }

private:
    pid_t pid_ = -1;
    std::optional<int> status_;
};

// A temporary directory (mkdtemp) for the children's logs and reports, removed at the end.
class temp_directory {
public:
    temp_directory() {
        auto pattern =
            (std::filesystem::temp_directory_path() / "letterbox-example-20-XXXXXX").string();
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
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

// The example's schema, `letterbox_example_20_<8 hex digits>`, dropped with everything in it.
class scratch_schema {
public:
    scratch_schema() {
        std::random_device rd;
        char suffix[9];
        std::snprintf(suffix, sizeof suffix, "%08x", static_cast<unsigned>(rd()));
        name_ = std::string("letterbox_example_20_") + suffix;
    }
    scratch_schema(const scratch_schema&) = delete;
    scratch_schema& operator=(const scratch_schema&) = delete;
    ~scratch_schema() {
        std::error_code ec;
        auto c = pg::connection::open(env("LETTERBOX_POSTGRES_URL"), 10s, "example-20", ec);
        if (!ec)
            (void)c.exec("DROP SCHEMA IF EXISTS " + name_ + " CASCADE");
    }
    const std::string& name() const noexcept { return name_; }

private:
    std::string name_;
};

std::string tail(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const auto s = text.str();
    return s.size() > 2000 ? s.substr(s.size() - 2000) : s;
}

std::int64_t scalar(pg::database& db, const std::string& sql) {
    auto uow = db.begin();
    std::error_code ec;
    auto r = uow.connection().exec(sql, {}, ec);
    return !ec && r.rows() == 1 ? r.int64(0, 0).value_or(-1) : -1;
}

// ---- the parent: the shipping service, and the story ------------------------------------------

int run_parent() {
    ::signal(SIGPIPE, SIG_IGN);
    scratch_schema schema;
    temp_directory dir;
    auto db = open_database(schema.name(), "shipping", 4); // creates the schema and its tables
    {
        auto uow = db.begin();
        // No unique constraint on shipments, on purpose: a second effect would be a second row.
        check(!uow.connection().exec("CREATE TABLE " + schema.name() +
                                     ".orders(instance int, order_no int, message_id uuid NOT "
                                     "NULL, PRIMARY KEY (instance, order_no))") &&
                  !uow.connection().exec("CREATE TABLE " + schema.name() +
                                         ".shipments(message_id uuid NOT NULL, instance int, "
                                         "order_no int)") &&
                  !uow.commit(),
              "create the business tables");
    }

    // The shipping service: a consumer whose idempotent effect writes one shipment.
    asio::io_context io;
    amqp::transport_options to;
    to.connection_name = "shipping";
    amqp::transport transport(io.get_executor(), env("LETTERBOX_AMQP_URL"), to);
    topology::queue queue;
    queue.name = "letterbox.example20.orders." + schema.name().substr(schema.name().size() - 8);
    queue.durable = false;
    queue.arguments.set("x-expires", std::int64_t{300000}); // forgotten 5 minutes after use
    std::optional<std::error_code> declared;
    transport.async_declare(queue, [&](std::error_code ec) { declared = ec; });
    check(run_until(
              io, [&] { return declared.has_value(); }, 30s) &&
              !*declared,
          "declare the queue");

    //[shipping
    pg::inbox_store inbox(db);
    steady_clock clock;
    auto ship = [&](const message& m, pg::unit_of_work& uow) {
        const auto order = decode_payload<nlohmann::json>(m);
        std::error_code ec;
        (void)uow.connection().exec(
            "INSERT INTO " + schema.name() +
                ".shipments(message_id, instance, order_no) VALUES ($1, $2, $3)",
            {pg::param::text(letterbox::to_string(m.id)),
             pg::param(order.at("instance").get<std::int64_t>()),
             pg::param(order.at("order").get<std::int64_t>())},
            ec);
        return ec;
    };
    auto shipping = idempotent(
        ship, inbox, [&] { return db.begin(); }, "shipping", clock);
    //]
    std::mutex m;
    std::map<message_id, int> deliveries; // per message, every delivery the broker made
    auto handler = [&](const middleware::handling& x) {
        {
            std::lock_guard lock(m);
            ++deliveries[x.d.msg.id];
        }
        if (auto ec = shipping(x.d.msg)) {
            middleware::handler_failure failure;
            failure.error = ec;
            return middleware::disposition::requeue(std::move(failure));
        }
        return middleware::disposition::ack();
    };
    asio::thread_pool handlers(2); // each delivery's PostgreSQL unit runs here, not on `io`
    consumer_options co;
    co.consume.queue = queue.name;
    co.consume.prefetch = 20;
    co.on_failure = failure_action::requeue;
    co.handler_executor = handlers.get_executor();
    consumer shipping_consumer(transport, handler, clock, co);
    std::optional<std::error_code> started;
    std::string tag;
    shipping_consumer.async_start([&](std::error_code ec, const std::string& t) {
        started = ec;
        tag = t;
    });
    check(run_until(
              io, [&] { return started.has_value(); }, 30s) &&
              !*started,
          "start the consumer");
    const auto effects = [&] {
        return shipping.stats().processed;
    };

    // The relays, then the instances.
    std::vector<std::unique_ptr<child_process>> relays;
    for (const char* name : {"relay-a", "relay-b"})
        relays.push_back(std::make_unique<child_process>(
            std::vector<std::string>{"--role", "relay", name, schema.name(),
                                     dir.file(std::string(name) + ".report")},
            dir.file(std::string(name) + ".log")));
    std::vector<std::unique_ptr<child_process>> writers;
    for (int i = 1; i <= instances; ++i)
        writers.push_back(std::make_unique<child_process>(
            std::vector<std::string>{"--role", "instance", std::to_string(i), schema.name(),
                                     queue.name, std::to_string(orders_per_instance)},
            dir.file("instance-" + std::to_string(i) + ".log")));
    std::printf("%d service instances and 2 relays started, each a process of its own, on "
                "PostgreSQL and RabbitMQ; each instance places %d orders\n",
                instances, orders_per_instance);

    // Halfway, relay A dies: at a moment it holds rows (claimed, and not yet marked published),
    // if that comes within 5 s.
    const bool halfway = run_until(
        io, [&] { return effects() >= total_orders / 2; }, 45s);
    check(halfway, "half of the orders shipped");
    const std::string held_sql = "SELECT count(*) FROM " + schema.name() +
                                 ".letterbox_outbox WHERE status = 0 AND lease_owner = 'relay-a'";
    for (const auto until = std::chrono::steady_clock::now() + 5s;
         scalar(db, held_sql) == 0 && std::chrono::steady_clock::now() < until;) {
        io.restart();
        io.poll(); // the consumer's transport goes on meanwhile
    }
    const auto at_kill = effects();
    relays[0]->signal(SIGKILL);
    const auto killed = relays[0]->wait_for(10s);
    check(killed && WIFSIGNALED(*killed) && WTERMSIG(*killed) == SIGKILL,
          "relay-a died of SIGKILL");
    const auto held = scalar(db, held_sql);
    std::printf("relay-a killed (SIGKILL) halfway, after %llu of %d shipments; rows it held "
                "under its lease, unpublished: %lld\n",
                static_cast<unsigned long long>(at_kill), total_orders,
                static_cast<long long>(held));

    // Relay B publishes the rest, A's rows once their leases ran out. Done when every order is
    // committed, published and shipped. (The outbox's count is a store call on this thread,
    // between two slices of the event loop: the consumer's handlers run on their own threads.)
    pg::outbox_store outbox(db);
    auto last_check = std::chrono::steady_clock::now() - 1s;
    bool all_done = false;
    const bool drained = run_until(
        io,
        [&] {
            const auto now = std::chrono::steady_clock::now();
            if (all_done || now - last_check < 100ms)
                return all_done;
            last_check = now;
            for (auto& w : writers)
                if (!w->poll())
                    return false;
            std::error_code ec;
            const auto stats = outbox.stats(std::chrono::system_clock::now(), ec);
            all_done =
                !ec && stats.pending == 0 && effects() >= static_cast<std::uint64_t>(total_orders);
            return all_done;
        },
        45s);
    check(drained, "every order published and shipped within 45 s");
    for (std::size_t i = 0; i < writers.size(); ++i)
        check(writers[i]->exited_ok(), "instance " + std::to_string(i + 1) + " placed its orders");

    // Relay B stops gracefully; the consumer takes what is left in the queue (copies of rows
    // that relay A published and could not mark).
    relays[1]->signal(SIGTERM);
    check(relays[1]->wait_for(20s).has_value() && relays[1]->exited_ok(),
          "relay-b stopped gracefully");
    std::optional<std::error_code> idle;
    shipping_consumer.async_wait_idle([&](std::error_code ec) { idle = ec; });
    check(run_until(
              io, [&] { return idle.has_value(); }, 20s) &&
              !*idle,
          "the queue is empty");
    std::optional<std::error_code> stopped, closed;
    shipping_consumer.async_shutdown(tag, [&](std::error_code ec) { stopped = ec; });
    run_until(
        io, [&] { return stopped.has_value(); }, 10s);
    transport.async_close([&](std::error_code ec) { closed = ec; });
    run_until(
        io, [&] { return closed.has_value(); }, 10s);
    handlers.join();

    unsigned long long b_published = 0, b_attempts = 0, b_notifications = 0;
    std::ifstream(dir.file("relay-b.report")) >> b_published >> b_attempts >> b_notifications;
    std::printf("relay-b: published %llu rows (%llu publishes), woken by %llu announcements "
                "(LISTEN/NOTIFY)\n",
                b_published, b_attempts, b_notifications);

    // The tally, in the database.
    const auto orders = scalar(db, "SELECT count(*) FROM " + schema.name() + ".orders");
    const auto shipments = scalar(db, "SELECT count(*) FROM " + schema.name() + ".shipments");
    const auto lost = scalar(db, "SELECT count(*) FROM " + schema.name() +
                                     ".orders o WHERE NOT EXISTS (SELECT 1 FROM " + schema.name() +
                                     ".shipments s WHERE s.message_id = "
                                     "o.message_id)");
    const auto duplicated =
        scalar(db, "SELECT count(*) FROM (SELECT message_id FROM " + schema.name() +
                       ".shipments GROUP BY message_id HAVING count(*) > 1) d");
    std::size_t delivered = 0;
    std::size_t distinct = 0;
    {
        std::lock_guard lock(m);
        distinct = deliveries.size();
        for (const auto& [id, n] : deliveries)
            delivered += static_cast<std::size_t>(n);
    }
    const auto absorbed = shipping.stats().duplicates;
    std::printf("broker-level duplicates: %zu (%zu deliveries of %zu messages); absorbed by the "
                "inbox: %llu\n",
                delivered - distinct, delivered, distinct,
                static_cast<unsigned long long>(absorbed));
    std::printf("orders %lld, shipments %lld: %lld lost, %lld duplicate effects\n",
                static_cast<long long>(orders), static_cast<long long>(shipments),
                static_cast<long long>(lost), static_cast<long long>(duplicated));
    check(orders == total_orders && shipments == total_orders && lost == 0 && duplicated == 0 &&
              distinct == static_cast<std::size_t>(total_orders),
          "every order shipped exactly once");
    if (failures > 0)
        for (const char* log : {"relay-a.log", "relay-b.log", "instance-1.log", "instance-2.log"})
            std::fprintf(stderr, "--- %s\n%s\n", log, tail(dir.file(log)).c_str());
    return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    try {
        if (args.size() == 6 && args[0] == "--role" && args[1] == "instance")
            return run_instance(std::stoi(args[2]), args[3], args[4], std::stoi(args[5]));
        if (args.size() == 5 && args[0] == "--role" && args[1] == "relay")
            return run_relay(args[2], args[3], args[4]);
        if (env("LETTERBOX_POSTGRES_URL").empty() || env("LETTERBOX_AMQP_URL").empty()) {
            std::printf(
                "example 20 SKIPPED: it needs a PostgreSQL server (LETTERBOX_POSTGRES_URL: %s) and "
                "a RabbitMQ broker (LETTERBOX_AMQP_URL: %s).\n"
                "Start both and run it again:\n"
                "  tests/tools/postgres.sh run -- tests/tools/rabbitmq.sh run -- %s\n"
                "(docs/testing-with-postgres.md, docs/testing-with-rabbitmq.md); nothing was run\n",
                env("LETTERBOX_POSTGRES_URL").empty() ? "not set" : "set",
                env("LETTERBOX_AMQP_URL").empty() ? "not set" : "set", argv[0]);
            return 0;
        }
        std::printf("example 20: 2 service instances, 2 relays, 1 consumer\n");
        return run_parent();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "MISMATCH: %s\n", e.what());
        return 1;
    }
}

// (clang-format must not rewrap the regexes below: one per line)
// clang-format off
// Expected output (regex lines):
//   ^example 20(: 2 service instances, 2 relays, 1 consumer| SKIPPED: it needs a PostgreSQL server)
//   (relay-a killed \(SIGKILL\) halfway, after [0-9]+ of 200 shipments|tests/tools/postgres.sh run -- tests/tools/rabbitmq.sh run --)
//   (relay-b: published [0-9]+ rows|docs/testing-with-postgres.md)
//   (orders 200, shipments 200: 0 lost, 0 duplicate effects|nothing was run)
