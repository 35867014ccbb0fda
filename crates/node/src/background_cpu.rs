//! Owns the node's background CPU: a runtime whose threads run at a lower OS scheduling
//! priority (a higher `nice`), and [`drive`], which moves a REST connection onto it while
//! it serves a wide request (`kuorum_rest::wide`: a LIST of more than a hundred objects,
//! in a Limited priority level) and back when that has been sent.
//!
//! Why: API Priority and Fairness bounds how many wide requests run at once (their seats),
//! not the CPU each one takes. Sending one LIST of a thousand objects keeps a core busy
//! for milliseconds (copies into the socket, most of it in the kernel), and a handful at
//! once on a small machine delay every other request's wake-ups: a consistent GET waits
//! for its turn on the follower, the leader and a quorum. At a lower priority the kernel
//! runs that work only when nothing at the normal priority wants the CPU. Wide responses
//! are never starved: at nice 10 they keep about a tenth of a busy core.
//!
//! The connection's future moves whole, between polls: its socket and timers stay
//! registered with the node's runtime, which wakes it wherever it is.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use kuorum_rest::wide::WideRequests;
use tokio::runtime::{Handle, Runtime};

/// `kuorum serve`'s default for `--background-nice`.
pub const DEFAULT_NICE: i32 = 10;

/// The background runtime; cloned handles share it.
#[derive(Clone)]
pub struct BackgroundCpu {
    inner: Arc<Owned>,
}

struct Owned {
    handle: Handle,
    /// Kept to be shut down without waiting (it may be dropped inside the node's runtime).
    runtime: Option<Runtime>,
}

impl Drop for Owned {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl std::fmt::Debug for BackgroundCpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundCpu").finish_non_exhaustive()
    }
}

impl BackgroundCpu {
    /// A runtime of `threads` workers, each at `nice` (1 to 19: lower priorities only, which
    /// need no privilege).
    pub fn start(threads: usize, nice: i32) -> io::Result<BackgroundCpu> {
        if !(1..=19).contains(&nice) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("nice {nice} is not within 1..=19")));
        }
        let threads = threads.max(1);
        // Each thread says how lowering itself went (a blocking thread started later
        // finds no one listening).
        let (said, told) = std::sync::mpsc::channel::<io::Result<()>>();
        let said = std::sync::Mutex::new(said);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("kuorum-background")
            .on_thread_start(move || {
                let _ = said.lock().unwrap().send(lower_this_thread(nice));
            })
            .enable_all()
            .build()?;
        for _ in 0..threads {
            told.recv_timeout(std::time::Duration::from_secs(10)).map_err(io::Error::other)??;
        }
        let handle = runtime.handle().clone();
        Ok(BackgroundCpu { inner: Arc::new(Owned { handle, runtime: Some(runtime) }) })
    }

    fn handle(&self) -> &Handle {
        &self.inner.handle
    }
}

/// Sets the calling thread's nice value (on Linux, `setpriority` with a thread id sets
/// that thread's alone).
fn lower_this_thread(nice: i32) -> io::Result<()> {
    // SAFETY: gettid takes nothing; setpriority reads its three integers.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's nice value.
pub fn nice_of_this_thread() -> io::Result<i32> {
    // SAFETY: as above; getpriority returns -1 both as a value and on error, told apart by
    // errno, which is cleared first.
    unsafe {
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t);
        if n == -1 && *libc::__errno_location() != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n)
    }
}

tokio::task_local! {
    /// The wide requests of the h2 stream being served (its task's).
    static STREAM: WideRequests;
}

/// The wide requests of the h2 stream this task serves, if it serves one.
pub(crate) fn this_stream() -> Option<WideRequests> {
    STREAM.try_with(Clone::clone).ok()
}

/// hyper's executor for one connection's h2 streams: each stream's task starts on the
/// node's runtime (never on the background one, where the connection may be at the time:
/// a watch begun then would stay there) and moves by its own wide requests, which also
/// count as its connection's.
#[derive(Clone)]
pub(crate) struct StreamExecutor {
    node: Handle,
    background: Option<BackgroundCpu>,
    connection: WideRequests,
}

impl StreamExecutor {
    /// For a connection whose wide requests are `connection`, on the calling runtime.
    pub(crate) fn new(background: Option<BackgroundCpu>, connection: WideRequests) -> StreamExecutor {
        StreamExecutor { node: Handle::current(), background, connection }
    }
}

impl<F> hyper::rt::Executor<F> for StreamExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        let stream = self.connection.stream();
        let served = STREAM.scope(stream.clone(), async move {
            fut.await;
        });
        self.node.spawn(drive(served, stream, self.background.clone()));
    }
}

type Connection = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Runs a connection's (or an h2 stream's) future to its end: on the calling runtime while
/// it serves no wide request, on `background` while it does (without one, on the calling
/// runtime).
pub(crate) async fn drive<F>(conn: F, wide: WideRequests, background: Option<BackgroundCpu>)
where
    F: Future<Output = ()> + Send + 'static,
{
    let Some(background) = background else { return conn.await };
    wide.set_movable();
    let mut conn: Connection = Box::pin(conn);
    loop {
        if let Step::Done = (Until { conn: conn.as_mut(), wide: &wide, background: false }).await {
            return;
        }
        let there = background.handle().spawn({
            let wide = wide.clone();
            async move {
                wide.set_moved(true);
                let step = Until { conn: conn.as_mut(), wide: &wide, background: true }.await;
                wide.set_moved(false);
                (step, conn)
            }
        });
        match there.await {
            Ok((Step::Move, back)) => conn = back,
            // Done, or the background runtime shut down (the process is ending).
            Ok((Step::Done, _)) | Err(_) => return,
        }
    }
}

enum Step {
    Done,
    /// Pending, and wanted on the other runtime.
    Move,
}

/// Polls the connection until it ends or, between polls, whether it sends a wide response
/// no longer matches where it runs.
struct Until<'a> {
    conn: Pin<&'a mut (dyn Future<Output = ()> + Send)>,
    wide: &'a WideRequests,
    background: bool,
}

impl Future for Until<'_> {
    type Output = Step;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Step> {
        if self.conn.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Step::Done);
        }
        // Pending: its wakers are registered, and the next poll (on the other runtime, at
        // once) registers them again.
        if self.wide.any() != self.background {
            return Poll::Ready(Step::Move);
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kuorum_rest::wide::WideGuard;

    /// The background threads run at the nice value asked for, and a connection's future
    /// runs there exactly while it has a wide request in flight, then comes back.
    #[tokio::test]
    async fn a_wide_request_moves_the_connection_to_the_background_and_back() {
        let bg = BackgroundCpu::start(1, 12).unwrap();
        let wide = WideRequests::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Option<WideGuard>>();
        let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<i32>();
        let w = wide.clone();
        // A stand-in for a connection: each message starts (Some, waiting to be moved, as
        // APF does) or ends (None) a wide request; then it reports the nice value of the
        // thread it runs on, once at once and once after a yield (a move happens between
        // polls).
        let conn = async move {
            let mut held = Vec::new();
            while let Some(m) = rx.recv().await {
                match m {
                    Some(g) => {
                        g.moved().await;
                        held.push(g);
                    }
                    None => drop(held.pop()),
                }
                seen_tx.send(nice_of_this_thread().unwrap()).unwrap();
                tokio::task::yield_now().await;
                seen_tx.send(nice_of_this_thread().unwrap()).unwrap();
            }
        };
        let ours = nice_of_this_thread().unwrap();
        assert_ne!(ours, 12);
        let task = tokio::spawn(drive(conn, wide, Some(bg)));
        tx.send(Some(w.start())).unwrap();
        assert_eq!((seen.recv().await, seen.recv().await), (Some(12), Some(12)), "moved before it runs");
        tx.send(Some(w.start())).unwrap();
        assert_eq!((seen.recv().await, seen.recv().await), (Some(12), Some(12)));
        tx.send(None).unwrap();
        assert_eq!((seen.recv().await, seen.recv().await), (Some(12), Some(12)), "one is still in flight");
        tx.send(None).unwrap();
        assert_eq!((seen.recv().await, seen.recv().await), (Some(12), Some(ours)), "back once none is");
        drop(tx);
        task.await.unwrap();
    }

    /// Without a background CPU, a wide request runs where it is, without waiting.
    #[tokio::test]
    async fn without_a_background_nothing_waits() {
        let wide = WideRequests::default();
        let w = wide.clone();
        let task = tokio::spawn(drive(
            async move {
                let g = w.start();
                g.moved().await;
            },
            wide,
            None,
        ));
        tokio::time::timeout(std::time::Duration::from_secs(5), task).await.unwrap().unwrap();
    }

    #[test]
    fn only_lower_priorities_are_taken() {
        assert!(BackgroundCpu::start(1, 0).is_err());
        assert!(BackgroundCpu::start(1, -5).is_err());
        assert!(BackgroundCpu::start(1, 20).is_err());
    }
}
