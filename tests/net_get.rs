//! Issue 25: `net::get`, the one HTTP GET crawlsieve makes itself (robots.txt), against hostile
//! servers on loopback: a body that trickles, a body far over the cap, a redirect loop, a
//! redirect to a refused address (a recorder counts its hits: none), a server that never
//! answers, one that hangs up mid-body, and one that does not speak HTTP. Each ends within its
//! limits with a clear error or a capped answer, never a hang or a panic.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crawlsieve::net::{get, system_lookup, GetError, GetLimits, Got, Policy};

/// A loopback server: `answer(request number, stream)` for every connection; counts them.
fn server(answer: impl Fn(usize, TcpStream) + Send + Sync + 'static) -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { continue };
            let n = h.fetch_add(1, Ordering::SeqCst);
            let a = answer.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = c.read(&mut buf);
                a(n, c);
            });
        }
    });
    (port, hits)
}

fn limits(timeout_ms: u64) -> GetLimits {
    GetLimits {
        timeout: Duration::from_millis(timeout_ms),
        max_bytes: 500 * 1024,
        max_redirects: 5,
        user_agent: "crawlsieve-test".into(),
        accept: "text/plain, */*;q=0.5",
    }
}

fn fetch(port: u16, allow: &[u16], lim: &GetLimits) -> (Result<Got, GetError>, Duration) {
    let policy = Policy {
        allow: allow.iter().map(|p| format!("127.0.0.1:{p}")).collect(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let t = Instant::now();
    let url = format!("http://127.0.0.1:{port}/robots.txt");
    let r = rt.block_on(get(&url, &policy, &system_lookup(), lim));
    (r, t.elapsed())
}

#[test]
fn a_trickling_body_ends_at_the_timeout() {
    let (port, _) = server(|_, mut c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
        for _ in 0..1000 {
            if c.write_all(b"a").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let (r, took) = fetch(port, &[port], &limits(1000));
    match r {
        Err(GetError::Failed(m)) => assert!(m.contains("within"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_server_that_never_answers_ends_at_the_timeout() {
    let (port, _) = server(|_, c| {
        std::thread::sleep(Duration::from_secs(10));
        drop(c);
    });
    let (r, took) = fetch(port, &[port], &limits(800));
    assert!(matches!(r, Err(GetError::Failed(_))), "{r:?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_body_over_the_cap_is_cut_at_the_cap() {
    let (port, _) = server(|_, mut c| {
        let body = vec![b'#'; 3 << 20];
        let _ = write!(
            c,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let _ = c.write_all(&body);
    });
    let (r, _) = fetch(port, &[port], &limits(10_000));
    let got = r.unwrap();
    assert_eq!(got.status, 200);
    assert!(got.truncated);
    assert_eq!(got.body.len(), 500 * 1024);
    // The same without a length (chunked, no end in sight): cut too.
    let (port, _) = server(|_, mut c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        let chunk = vec![b'#'; 64 << 10];
        for _ in 0..64 {
            let _ = write!(c, "{:x}\r\n", chunk.len());
            if c.write_all(&chunk).is_err() || c.write_all(b"\r\n").is_err() {
                return;
            }
        }
    });
    let got = fetch(port, &[port], &limits(10_000)).0.unwrap();
    assert!(got.truncated);
    assert_eq!(got.body.len(), 500 * 1024);
}

#[test]
fn a_redirect_loop_stops_after_five_hops() {
    let (port, hits) = server(|_, mut c| {
        let _ = c.write_all(
            b"HTTP/1.1 302 Found\r\nLocation: /robots.txt\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
    });
    let (r, _) = fetch(port, &[port], &limits(10_000));
    assert_eq!(r, Err(GetError::TooManyRedirects(5)));
    assert_eq!(hits.load(Ordering::SeqCst), 6, "the URL and five redirects");
}

#[test]
fn a_redirect_to_a_refused_address_is_never_followed() {
    let (recorder, recorded) = server(|_, mut c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    });
    let (port, _) = server(move |_, mut c| {
        let _ = write!(
            c,
            "HTTP/1.1 301 Moved\r\nLocation: http://127.0.0.1:{recorder}/robots.txt\r\nContent-Length: 0\r\n\r\n"
        );
    });
    // Only the first server is allowed: loopback is special-purpose, the recorder's port is not.
    let (r, _) = fetch(port, &[port], &limits(5_000));
    match r {
        Err(GetError::Refused { hop, .. }) => assert_eq!(hop, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(recorded.load(Ordering::SeqCst), 0);
}

#[test]
fn a_broken_answer_is_a_clear_error() {
    // Hangs up in the middle of the body.
    let (port, _) = server(|_, mut c| {
        let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nUser-agent: *\n");
    });
    let (r, _) = fetch(port, &[port], &limits(5_000));
    assert!(matches!(r, Err(GetError::Failed(_))), "{r:?}");
    // Not HTTP at all.
    let (port, _) = server(|_, mut c| {
        let _ = c.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
    });
    let (r, _) = fetch(port, &[port], &limits(5_000));
    assert!(matches!(r, Err(GetError::Failed(_))), "{r:?}");
    // A redirect without a Location.
    let (port, _) = server(|_, mut c| {
        let _ = c.write_all(b"HTTP/1.1 302 Found\r\nContent-Length: 0\r\n\r\n");
    });
    let (r, _) = fetch(port, &[port], &limits(5_000));
    match r {
        Err(GetError::Failed(m)) => assert!(m.contains("Location"), "{m}"),
        other => panic!("{other:?}"),
    }
}
