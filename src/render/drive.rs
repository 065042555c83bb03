//! The steps of driving one page in a tab (`Renderer::drive`): the main document's redirect
//! chain and response, the settle wait, reading the page, its screenshot.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use chromiumoxide::cdp::browser_protocol::network::{
    EventRequestWillBeSent, EventResponseReceived, RequestId, ResourceType,
};
use chromiumoxide::cdp::browser_protocol::page::FrameId;
use chromiumoxide::listeners::EventStream;
use futures::{FutureExt, StreamExt};

use crate::page::Timings;

use super::{
    egress, hashes, screenshot_params, thumb, Rendered, Renderer, READ_JS, SETTLE_JS, SETTLE_QUIET,
};

/// The main frame's document requests sent so far: the redirect chain (the requests sharing the
/// first one's id) and that id.
pub(super) fn main_document(
    sent: &mut EventStream<EventRequestWillBeSent>,
    main_frame: &FrameId,
) -> (Vec<String>, Option<RequestId>) {
    let mut chain: Vec<String> = Vec::new();
    let mut id = None;
    while let Some(Some(ev)) = sent.next().now_or_never() {
        if ev.r#type != Some(ResourceType::Document) || ev.frame_id.as_ref() != Some(main_frame) {
            continue;
        }
        match &id {
            None => {
                id = Some(ev.request_id.clone());
                chain.push(ev.request.url.clone());
            }
            Some(i) if *i == ev.request_id => chain.push(ev.request.url.clone()),
            _ => {}
        }
    }
    (chain, id)
}

/// The status and content type of the response to request `id` (and the egress proxy's error,
/// when the proxy answered itself), from the responses received so far.
pub(super) fn read_response(
    received: &mut EventStream<EventResponseReceived>,
    id: Option<&RequestId>,
    out: &mut Rendered,
) {
    while let Some(Some(ev)) = received.next().now_or_never() {
        if Some(&ev.request_id) == id {
            out.status = ev.response.status as u16;
            out.content_type = ev.response.mime_type.clone();
            // The egress proxy answered itself (the target refused the connection or did
            // not answer): not the site's page, an error of the render.
            if let Some(why) = ev
                .response
                .headers
                .inner()
                .as_object()
                .and_then(|h| {
                    h.iter()
                        .find(|(k, _)| k.eq_ignore_ascii_case(egress::EGRESS_HEADER))
                })
                .and_then(|(_, v)| v.as_str())
            {
                out.proxy_error = why.to_string();
            }
        }
    }
}

impl Renderer {
    /// Wait until `page` is stable: loaded, and [`SETTLE_QUIET`] without a DOM change or a
    /// completed resource, at most `settle_max`.
    pub(super) async fn settle(&self, page: &chromiumoxide::Page) {
        // Settle on events, not fixed polls: an observer in the page notes every DOM change
        // (nodes added or removed, text changed) and every resource that completes; the page is
        // stable once it has loaded and [`SETTLE_QUIET`] passed without either, at most
        // `settle_max`. Each wait is one DevTools call of at most 2 s (under the request
        // timeout); a call that fails (the page navigated: a new document) waits again.
        let start = Instant::now();
        while start.elapsed() < self.cfg.settle_max {
            let wait = (self.cfg.settle_max - start.elapsed()).min(Duration::from_secs(2));
            let js = SETTLE_JS
                .replace("QUIET", &SETTLE_QUIET.as_millis().to_string())
                .replace("WAIT", &wait.as_millis().to_string())
                .replace("CAP", &self.cfg.max_subresources.to_string());
            match page.evaluate(js).await {
                Ok(v) => match v.into_value::<String>().as_deref() {
                    Ok("quiet") | Ok("cap") => break,
                    _ => {}
                },
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }

    /// Read the final URL, the DOM (within `max_html_bytes`) and the timings of `page`.
    pub(super) async fn read_page(
        &self,
        page: &chromiumoxide::Page,
        url: &str,
        out: &mut Rendered,
    ) -> Result<()> {
        // One round trip for the final URL, the DOM and the timings.
        let (final_url, html, t): (String, String, Option<[f64; 3]>) = page
            .evaluate(READ_JS)
            .await
            .context("reading the page")?
            .into_value()
            .context("reading the page")?;
        out.final_url = if final_url.is_empty() {
            url.to_string()
        } else {
            final_url
        };
        out.html = html;
        if out.html.len() > self.cfg.max_html_bytes {
            return Err(anyhow!(
                "rendered HTML is {} bytes (limit {})",
                out.html.len(),
                self.cfg.max_html_bytes
            ));
        }
        out.timings = t.map(|t| Timings {
            ttfb_ms: t[0],
            dcl_ms: t[1],
            load_ms: t[2],
        });
        Ok(())
    }

    /// Take the screenshot of `page`: its two hashes, and its thumbnail when kept.
    pub(super) async fn screenshot(
        &self,
        page: &chromiumoxide::Page,
        out: &mut Rendered,
    ) -> Result<()> {
        let png = page
            .screenshot(screenshot_params(self.cfg.viewport))
            .await
            .context("screenshot")?;
        let (g, d) = hashes(&png)?;
        out.phash = Some(g);
        out.phash_dct = Some(d);
        if self.cfg.thumbnails {
            out.thumbnail = thumb::thumbnail(&png).ok();
        }
        Ok(())
    }
}
