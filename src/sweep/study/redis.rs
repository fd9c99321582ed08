//! A journal in Redis, as Optuna's `JournalRedisBackend` keeps it (prefix `""`), for a cluster
//! without a shared filesystem: record `n` (from 0) is the string key `:log:n`, and
//! `:log_number` is the last record's number; a Lua script increments it and sets the record in
//! one step, so appends from any number of workers never collide.
//!
//! Optuna takes no lock in Redis; a tidemark worker decides under one of its own, the key
//! `:tidemark:lock` (`SET NX` with an expiry of [`LOCK_EXPIRY`], so that a dead worker's lock
//! lapses), which Optuna ignores.

use std::time::Duration;

use redis::{Commands, Connection, Script};

use crate::error::{Error, SweepError};

/// How long a lock left by a dead worker stands.
pub const LOCK_EXPIRY: Duration = Duration::from_secs(30);

/// Appends each argument after the second as a record, as Optuna's script does (numbered from
/// 0: the counter starts at -1); the first is the prefix. If the second is not empty, only when
/// the last record's number is still that (`-1` for none): else it returns 0.
const APPEND: &str = "local n = redis.call('get', string.format('%s:log_number', ARGV[1])) \
    if ARGV[2] ~= '' and (n or '-1') ~= ARGV[2] then return 0 end \
    redis.call('setnx', string.format('%s:log_number', ARGV[1]), -1) \
    for j = 3, #ARGV do \
    local i = redis.call('incr', string.format('%s:log_number', ARGV[1])) \
    redis.call('set', string.format('%s:log:%d', ARGV[1], i), ARGV[j]) end \
    return 1";

/// Deletes the lock if this worker still holds it.
const RELEASE: &str = "if redis.call('get', KEYS[1]) == ARGV[1] then \
    return redis.call('del', KEYS[1]) else return 0 end";

/// A Redis journal and how far this worker has read it.
pub struct RedisJournal {
    url: String,
    connection: Connection,
    /// The next record to read.
    next: i64,
}

impl std::fmt::Debug for RedisJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RedisJournal({}, next {})", self.url, self.next)
    }
}

impl RedisJournal {
    /// Connects to `url` (`redis://HOST:PORT`).
    pub fn open(url: &str) -> Result<RedisJournal, Error> {
        let connection = redis::Client::open(url)
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(10)))
            .map_err(|e| fail(url, e))?;
        Ok(RedisJournal {
            url: url.to_string(),
            connection,
            next: 0,
        })
    }

    /// The records appended since the last read.
    pub fn read_new(&mut self) -> Result<Vec<String>, Error> {
        let url = self.url.clone();
        let last: Option<i64> = (self.connection.get(":log_number")).map_err(|e| fail(&url, e))?;
        let mut lines = Vec::new();
        while self.next <= last.unwrap_or(-1) {
            let key = format!(":log:{}", self.next);
            let line: Option<String> = self.connection.get(&key).map_err(|e| fail(&url, e))?;
            match line {
                Some(line) => lines.push(line),
                // Numbered and not yet set: only a cluster's appender (two calls) leaves this.
                None => break,
            }
            self.next += 1;
        }
        Ok(lines)
    }

    /// Appends `lines`, one record each, in one step; with `read`, only if the journal still
    /// holds `read` records (none appended since this worker read it). Whether it did.
    pub fn append(&mut self, read: Option<usize>, lines: &[String]) -> Result<bool, Error> {
        let script = Script::new(APPEND);
        let mut call = script.prepare_invoke();
        call.arg("")
            .arg(read.map_or(String::new(), |r| (r as i64 - 1).to_string()));
        for line in lines {
            call.arg(line);
        }
        let url = self.url.clone();
        let done: i64 = (call.invoke(&mut self.connection)).map_err(|e| fail(&url, e))?;
        Ok(done == 1)
    }

    /// Takes tidemark's lock, waiting for it; returns its token.
    pub fn lock(&mut self, token: &str) -> Result<(), Error> {
        let mut wait = Duration::from_millis(1);
        loop {
            let taken: Option<String> = redis::cmd("SET")
                .arg(":tidemark:lock")
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(LOCK_EXPIRY.as_millis() as u64)
                .query(&mut self.connection)
                .map_err(|e| fail(&self.url, e))?;
            if taken.is_some() {
                return Ok(());
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_millis(200));
        }
    }

    /// Releases the lock `token` holds.
    pub fn unlock(&mut self, token: &str) {
        let _ = Script::new(RELEASE)
            .key(":tidemark:lock")
            .arg(token)
            .invoke::<i64>(&mut self.connection);
    }
}

/// A Redis error, naming the server. One that waiting may mend (the server unreachable, gone,
/// loading, out of memory) is the storage failing: exit code 75, rejoin once it is back. One
/// that says what `--storage` gets wrong (its URL, its password or user, a key of the
/// journal's holding another type) is the argument's: exit code 2, with what to fix, since a
/// job retrying it would fail the same way for ever.
fn fail(url: &str, e: redis::RedisError) -> Error {
    let message = format!("Redis: {}", crate::config::one_line(&e.to_string()));
    SweepError::storage_failed(url, message, what_to_fix(&e))
}

/// What to change where `e` is no failure of the server's but of what `--storage` names it by,
/// or of what it holds; `None` where the server is unreachable or failing.
fn what_to_fix(e: &redis::RedisError) -> Option<&'static str> {
    use redis::{ErrorKind, ServerErrorKind};
    let password = "give the server's password in the URL: redis://:PASSWORD@HOST:PORT, or \
                    redis://USER:PASSWORD@HOST:PORT for a user of its ACL";
    let refused = matches!(e.kind(), ErrorKind::Server(ServerErrorKind::ResponseError))
        && !e
            .detail()
            .is_some_and(|d| d.contains("max number of clients"));
    match (e.kind(), e.code()) {
        (ErrorKind::InvalidClientConfig, _) => {
            Some("give redis://HOST:PORT (or redis://:PASSWORD@HOST:PORT/DB)")
        }
        (ErrorKind::AuthenticationFailed, _) | (_, Some("NOAUTH" | "WRONGPASS")) => Some(password),
        (_, Some("NOPERM")) => Some(
            "its user may not run the journal's commands (GET, SET, EVAL) on its keys: grant \
             them in the server's ACL, or give another user",
        ),
        (ErrorKind::UnexpectedReturnType | ErrorKind::Parse, _) | (_, Some("WRONGTYPE")) => Some(
            "a key of the journal's (:log_number, :log:N) holds what no journal writes: give \
             a database of its own (redis://HOST:PORT/DB), or delete the key",
        ),
        _ if refused => Some(
            "the server refused the journal's commands: give a Redis server of version 6 or \
             later, and a database it has (redis://HOST:PORT/DB)",
        ),
        _ => None,
    }
}
