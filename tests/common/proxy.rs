//! A TCP proxy on loopback for fault injection: it forwards to an upstream address and, on
//! command, delays every chunk, black-holes traffic (holds it without forwarding or closing),
//! refuses new connections, or cuts every open connection at once.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does with traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Forward at once.
    Pass = 0,
    /// Forward each chunk after `delay`.
    Delay = 1,
    /// Hold every chunk (the peers see a silent, open connection).
    BlackHole = 2,
    /// Accept and close new connections at once.
    Refuse = 3,
}

struct Shared {
    mode: AtomicU8,
    delay_ms: AtomicU64,
    stop: AtomicBool,
    conns: Mutex<Vec<TcpStream>>,
    accepted: AtomicU64,
}

/// A running proxy; stops accepting on drop.
pub struct Proxy {
    pub port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Listen on a free loopback port and forward to `upstream` (a loopback address).
    pub fn start(upstream: SocketAddr) -> Proxy {
        assert!(upstream.ip().is_loopback(), "tests aim at loopback only");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            mode: AtomicU8::new(Mode::Pass as u8),
            delay_ms: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            conns: Mutex::new(Vec::new()),
            accepted: AtomicU64::new(0),
        });
        let sh = shared.clone();
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || loop {
            if sh.stop.load(Ordering::Relaxed) {
                return;
            }
            let client = match listener.accept() {
                Ok((c, _)) => c,
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                }
            };
            client.set_nonblocking(false).unwrap();
            if sh.mode.load(Ordering::Relaxed) == Mode::Refuse as u8 {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            }
            let Ok(server) = TcpStream::connect_timeout(&upstream, Duration::from_secs(2)) else {
                let _ = client.shutdown(Shutdown::Both);
                continue;
            };
            sh.accepted.fetch_add(1, Ordering::Relaxed);
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            {
                let mut c = sh.conns.lock().unwrap();
                c.push(client.try_clone().unwrap());
                c.push(server.try_clone().unwrap());
            }
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let sh = sh.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        loop {
                            match sh.mode.load(Ordering::Relaxed) {
                                m if m == Mode::BlackHole as u8 => {
                                    std::thread::sleep(Duration::from_millis(5))
                                }
                                m if m == Mode::Delay as u8 => {
                                    std::thread::sleep(Duration::from_millis(
                                        sh.delay_ms.load(Ordering::Relaxed),
                                    ));
                                    break;
                                }
                                _ => break,
                            }
                        }
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = from.shutdown(Shutdown::Both);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
        Proxy { port, shared }
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn set(&self, mode: Mode) {
        self.shared.mode.store(mode as u8, Ordering::Relaxed);
    }

    pub fn delay(&self, d: Duration) {
        self.shared
            .delay_ms
            .store(d.as_millis() as u64, Ordering::Relaxed);
        self.set(Mode::Delay);
    }

    /// Reset every open connection (both sides).
    pub fn cut(&self) {
        let mut c = self.shared.conns.lock().unwrap();
        for s in c.drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.shared.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.cut();
    }
}
