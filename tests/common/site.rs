//! A loopback web site for the render tests and benchmark: article pages, a paginated
//! catalogue, JavaScript-only content, redirects, a login form, and a page that never finishes.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::time::Duration;

pub const ARTICLE: &str =
    "<p>The city council approved the new budget after a long debate on Tuesday evening.</p>\
<p>Officials said the plan would fund road repairs, schools and a new public library.</p>\
<p>Critics argued that the spending increase was larger than the town could afford.</p>\
<p>Supporters pointed to a decade of delayed repairs on bridges and water pipes.</p>\
<p>The mayor promised quarterly reports so that residents can follow every project.</p>\
<p>A local business group welcomed the decision but asked for lower permit fees.</p>\
<p>Teachers attended the meeting to ask for smaller classes and better equipment.</p>\
<p>The library project includes a children's reading room and a community kitchen.</p>\
<p>Construction is expected to begin in the spring and last about eighteen months.</p>\
<p>Residents will be able to comment on the designs at three public workshops.</p>";

pub fn site(title: &str, body: &str, ad: &str) -> String {
    format!(
        "<!doctype html><html><head><title>{title}</title></head><body>\
         <header><nav><a href=/>Home</a> <a href=/news>News</a></nav></header>\
         <div class=content><article><h1>{title}</h1>{body}</article></div>\
         <aside><div class=ad style='background:#ccc;height:120px'>{ad}</div></aside>\
         <footer>Example Daily</footer></body></html>"
    )
}

/// The path of the HTTP request on `stream`, its header read through; `None` if none came.
pub fn request_path(stream: &std::net::TcpStream) -> Option<String> {
    let line = request_line(stream)?;
    Some(line.split_whitespace().nth(1).unwrap_or("/").to_string())
}

/// A complete HTTP/1.1 response (`Connection: close`) with `body`.
pub fn response(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

/// A `302 Found` to `location`.
pub fn redirect(location: &str) -> Vec<u8> {
    format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .into_bytes()
}

/// A loopback server that records whoever reaches it: connections as they are accepted, and
/// the first line of each request (`GET http://host/path HTTP/1.1`, `CONNECT host:443 …` when
/// it is a browser's proxy); each is answered with a small page.
pub struct Recorder {
    pub port: u16,
    pub hits: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// Start a [`Recorder`].
pub fn recorder() -> Recorder {
    use std::sync::atomic::Ordering;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let r = Recorder {
        port,
        hits: Default::default(),
        requests: Default::default(),
    };
    let (hits, requests) = (r.hits.clone(), r.requests.clone());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            hits.fetch_add(1, Ordering::SeqCst);
            let requests = requests.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                if let Some(line) = request_line(&s) {
                    requests.lock().unwrap().push(line);
                }
                let mut w = s;
                let _ = w.write_all(&response("200 OK", "text/html", b"ok"));
            });
        }
    });
    r
}

/// The first line of the HTTP request on `stream`, its header read through.
fn request_line(stream: &std::net::TcpStream) -> Option<String> {
    let mut r = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut h = String::new();
    while r.read_line(&mut h).is_ok_and(|n| n > 2) {
        h.clear();
    }
    Some(line.trim_end().to_string())
}

/// A loopback server with the test's pages; returns its base URL.
pub fn serve() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            std::thread::spawn(move || {
                let Some(path) = request_path(&stream) else {
                    return;
                };
                let mut w = stream;
                let page = |status: &str, body: String| {
                    response(status, "text/html; charset=utf-8", body.as_bytes())
                };
                let resp = match path.as_str() {
                    "/a1" => page("200 OK", site("Budget approved", ARTICLE, "Buy shoes today")),
                    "/a2" => page("200 OK", site("Budget approved", ARTICLE, "Cheap flights")),
                    "/js" => page(
                        "200 OK",
                        format!(
                            "<html><head><title>JS</title></head><body><div id=app></div><script>\
                             setTimeout(() => {{ document.getElementById('app').innerHTML = `<article>{}</article>`; }}, 300);\
                             </script></body></html>",
                            ARTICLE.replace("budget", "rendered-by-javascript budget")
                        ),
                    ),
                    "/login" => page(
                        "200 OK",
                        "<html><head><title>Sign in</title></head><body><form method=post><input name=u><input type=password name=p><button>Sign in</button></form></body></html>".into(),
                    ),
                    p if p.starts_with("/p/") => {
                        // A paginated list: one template, different items.
                        let n: usize = p[3..].parse().unwrap_or(0);
                        let items: String = (0..20)
                            .map(|i| format!("<li><a href=/item/{}>Item number {} of the catalogue, with a short description</a></li>", n * 20 + i, n * 20 + i))
                            .collect();
                        page("200 OK", site(&format!("Catalogue page {n}"), &format!("<ul>{items}</ul>"), "ad"))
                    }
                    "/waf" => page(
                        "403 Forbidden",
                        "<html><head><title>Just a moment...</title></head><body><h1>Checking your browser before accessing the site</h1><p>Cloudflare Ray ID: 7a1b2c</p></body></html>".into(),
                    ),
                    "/waf200" => page(
                        "200 OK",
                        "<html><head><title>Just a moment...</title></head><body><h1>Checking your browser before accessing the site</h1><p>Cloudflare Ray ID: 7a1b2c</p></body></html>".into(),
                    ),
                    "/maint" => page(
                        "200 OK",
                        "<html><head><title>系统维护中</title></head><body><h1>系统维护中</h1><p>网站正在升级，请稍后再来。</p></body></html>".into(),
                    ),
                    "/many" => page(
                        "200 OK",
                        site("Many", &format!("{ARTICLE}{}", (0..6).map(|i| format!("<img src=/img/{i}.png>")).collect::<String>()), "ad"),
                    ),
                    "/leaky" => page(
                        "200 OK",
                        site(
                            "Leaky",
                            &format!("{ARTICLE}<img src=\"http://10.0.0.1/x.png\"><iframe src=\"http://169.254.169.254/latest/meta-data/\"></iframe>"),
                            "ad",
                        ),
                    ),
                    "/r-private" => redirect("http://10.0.0.1/"),
                    "/r1" => redirect("/r2"),
                    "/r2" => redirect("/a1"),
                    "/hang" => {
                        // Headers and a little body, then nothing: the load never finishes.
                        let _ = w.write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n<html><body><p>partial");
                        std::thread::sleep(Duration::from_secs(60));
                        return;
                    }
                    _ => page("404 Not Found", "<h1>Not found</h1>".into()),
                };
                let _ = w.write_all(&resp);
            });
        }
    });
    base
}

/// Renderer settings for the tests: loopback allowed (it is refused by default), short waits.
pub fn local_render_config() -> crawlsieve::render::RenderConfig {
    crawlsieve::render::RenderConfig {
        page_timeout: Duration::from_secs(15),
        settle_max: Duration::from_millis(600),
        policy: crawlsieve::render::safety::Policy {
            allow: vec!["127.0.0.1".into()],
        },
        ..crawlsieve::render::RenderConfig::default()
    }
}
