//! `GET /events`: server-sent events from the engine's bus, so an open page follows
//! what happens elsewhere (a new request, a decision made in a chat). Each event is
//! `change` with the subject's id; the page fetches what it shows again. A reader
//! that falls behind the bus gets one `change` for everything it missed.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::broadcast::error::RecvError;

use super::signin::Signed;
use super::DashState;

/// How often an idle stream says it is alive (proxies close silent connections).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub(super) async fn events(State(state): State<DashState>, _signed: Signed) -> Response {
    let mut bus = state.engine.subscribe();
    let stop = state.shutdown.clone();
    let stream = async_stream(move |tx| async move {
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                e = bus.recv() => e,
            };
            let data = match event {
                Ok(e) => match e.subject() {
                    Some(id) => id.to_string(),
                    None => continue,
                },
                Err(RecvError::Lagged(_)) => "*".to_string(),
                Err(RecvError::Closed) => return,
            };
            if tx
                .send(Event::default().event("change").data(data))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

/// A stream fed by `f` through a small channel: the stream ends when `f` returns.
fn async_stream<F, Fut>(
    f: F,
) -> impl futures_util::Stream<Item = Result<Event, Infallible>> + Send + 'static
where
    F: FnOnce(tokio::sync::mpsc::Sender<Event>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(f(tx));
    futures_util::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    )
}
