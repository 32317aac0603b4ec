// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/postgres/database.hpp>
#include <letterbox/postgres/outbox_options.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::postgres {

/// Wakes a relay when another process commits outbox rows: a connection of its own that
/// `LISTEN`s on `outbox_options::channel` and calls `on_rows` for each announcement of its
/// database's schema (`outbox_store::add` queues one per unit of work, delivered at commit).
///
/// **It never blocks its executor.** The connection is made with libpq's non-blocking API
/// (`PQconnectStartParams`, `PQconnectPoll`), and every wait for the server is an Asio wait on
/// the connection's socket: it can share an `io_context` with an AMQP transport whose
/// heartbeats must keep flowing. After a lost connection it reconnects, with a delay that
/// doubles from `retry_min` to `retry_max`; after each (re)connection it calls `on_rows` once,
/// since announcements made while it was away are lost (the relay's poll covers them too).
///
/// `on_rows` runs on the executor; it should be quick (`outbox_relay::waker()` is). Construct,
/// `start` and `stop` on the executor's thread (or a strand); destruction stops it. As for any
/// Asio I/O object, destroy it before its `io_context` (declare it after).
///
/// Example:
///
///     letterbox::postgres::outbox_listener listener(io.get_executor(), db, relay.waker());
///     listener.start();
///     // ... io.run() ...
///     listener.stop();
class outbox_listener {
public:
    using executor_type = boost::asio::any_io_executor;

    outbox_listener(executor_type ex, const database& db, std::function<void()> on_rows)
        : state_(std::make_shared<state>(std::move(ex), db.state(), std::move(on_rows))) {}
    outbox_listener(const outbox_listener&) = delete;
    outbox_listener& operator=(const outbox_listener&) = delete;
    ~outbox_listener() { stop(); }

    /// The first and the longest delay before reconnecting.
    void set_retry_delays(std::chrono::milliseconds min, std::chrono::milliseconds max) {
        state_->retry_min = min;
        state_->retry_max = std::max(min, max);
    }

    /// Connects and listens, in the background.
    void start() {
        state_->stopped = false;
        state_->connect();
    }
    /// Closes the connection and cancels its waits; `on_rows` is not called after it returns.
    void stop() { state_->close(true); }

    /// Whether the connection listens now. This and the two counts below are plain members that
    /// the executor writes: read them on the executor (or after it stopped).
    bool listening() const noexcept { return state_->listening; }
    /// Announcements of this schema received, and connections made, since construction.
    std::uint64_t notifications() const noexcept { return state_->notifications; }
    std::uint64_t connections() const noexcept { return state_->connections; }

private:
    struct state : std::enable_shared_from_this<state> {
        state(executor_type ex, std::shared_ptr<detail::database_state> db, std::function<void()> f)
            : socket(ex)
            , timer(ex)
            , db(std::move(db))
            , on_rows(std::move(f)) {}
        ~state() { close(true); }

        boost::asio::posix::stream_descriptor socket;
        boost::asio::steady_timer timer;
        std::shared_ptr<detail::database_state> db;
        std::function<void()> on_rows;
        PGconn* conn = nullptr;
        bool stopped = true;
        bool listening = false;
        std::uint64_t notifications = 0;
        std::uint64_t connections = 0;
        std::chrono::milliseconds retry_min{100};
        std::chrono::milliseconds retry_max{5000};
        std::chrono::milliseconds retry_next{100};
        std::uint64_t generation = 0; // a wait of an older connection finds nothing to do

        void close(bool stop) {
            if (stop)
                stopped = true;
            listening = false;
            ++generation;
            boost::system::error_code ignored;
            timer.cancel();
            if (socket.is_open()) {
                socket.cancel(ignored);
                (void)socket.release(); // libpq owns the file descriptor
            }
            if (conn) {
                PQfinish(conn);
                conn = nullptr;
            }
        }

        void retry_later() {
            close(false);
            if (stopped || !db)
                return;
            timer.expires_after(retry_next);
            retry_next = std::min(retry_max, retry_next * 2);
            timer.async_wait([self = shared_from_this(), g = generation](auto ec) {
                if (!ec && g == self->generation && !self->stopped)
                    self->connect();
            });
        }

        /// Watches the connection's socket (which may change while connecting) for `read` or
        /// write readiness, then calls `next`.
        template <class Next>
        void wait(bool read, Next next) {
            const int fd = PQsocket(conn);
            if (fd < 0)
                return retry_later();
            boost::system::error_code ec;
            if (socket.is_open() && socket.native_handle() != fd)
                (void)socket.release();
            if (!socket.is_open())
                socket.assign(fd, ec);
            if (ec)
                return retry_later();
            socket.async_wait(read ? boost::asio::posix::stream_descriptor::wait_read
                                   : boost::asio::posix::stream_descriptor::wait_write,
                              [self = shared_from_this(), g = generation, next](auto e) mutable {
                                  if (g != self->generation || self->stopped)
                                      return;
                                  if (e)
                                      return self->retry_later();
                                  next();
                              });
        }

        void connect() {
            close(false);
            if (stopped || !db)
                return;
            const char* keywords[] = {
                "connect_timeout",     "application_name", "keepalives", "keepalives_idle",
                "keepalives_interval", "keepalives_count", "dbname",     nullptr};
            const std::string name = db->options().application_name + "-listener";
            const char* values[] = {"10", name.c_str(),           "1",    "10", "5",
                                    "3",  db->conninfo().c_str(), nullptr};
            conn = PQconnectStartParams(keywords, values, 1);
            if (!conn || PQstatus(conn) == CONNECTION_BAD)
                return retry_later();
            poll_connect(PGRES_POLLING_WRITING);
        }

        void poll_connect(PostgresPollingStatusType status) {
            switch (status) {
            case PGRES_POLLING_READING:
                return wait(true, [this] { poll_connect(PQconnectPoll(conn)); });
            case PGRES_POLLING_WRITING:
                return wait(false, [this] { poll_connect(PQconnectPoll(conn)); });
            case PGRES_POLLING_OK:
                return listen();
            default:
                return retry_later();
            }
        }

        void listen() {
            PQsetNoticeProcessor(
                conn, [](void*, const char*) {}, nullptr);
            const std::string sql = "LISTEN " + std::string(outbox_options::channel);
            if (PQsetnonblocking(conn, 1) != 0 || PQsendQuery(conn, sql.c_str()) != 1)
                return retry_later();
            flush();
        }

        void flush() {
            const int pending = PQflush(conn);
            if (pending < 0)
                return retry_later();
            if (pending > 0)
                return wait(false, [this] { flush(); });
            wait(true, [this] { receive(); });
        }

        /// Reads what the server sent: the LISTEN's result first, then notifications.
        void receive() {
            if (PQconsumeInput(conn) != 1)
                return retry_later();
            while (!PQisBusy(conn)) {
                PGresult* r = PQgetResult(conn);
                if (!r)
                    break;
                const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
                PQclear(r);
                if (!ok)
                    return retry_later();
                if (!listening) {
                    listening = true;
                    ++connections;
                    retry_next = retry_min;
                    announce(); // what was committed while nobody listened
                    if (stopped)
                        return;
                }
            }
            while (PGnotify* n = PQnotifies(conn)) {
                const bool ours = n->extra && db->schema_name() == n->extra;
                PQfreemem(n);
                if (ours) {
                    ++notifications;
                    announce();
                    if (stopped)
                        return;
                }
            }
            wait(true, [this] { receive(); });
        }

        void announce() {
            if (on_rows)
                on_rows();
        }
    };

    std::shared_ptr<state> state_;
};

} // namespace letterbox::postgres
