//! The RCON listener: authenticates each connection and hands commands to a [`CommandHandler`].

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

use super::frame::{Frame, FrameError, MAX_REPLY_CHUNK, PacketType};

/// What runs an authenticated command; the reply text goes back to the client.
pub trait CommandHandler: Send + Sync + 'static {
    /// Run `command` sent by `remote` and return the reply text.
    fn execute(&self, remote: SocketAddr, command: &str) -> impl Future<Output = String> + Send;
}

/// An RCON server bound to a listener.
pub struct RconServer<H> {
    listener: TcpListener,
    password: Arc<str>,
    handler: Arc<H>,
}

impl<H: CommandHandler> RconServer<H> {
    /// Serve RCON on an already bound listener.
    pub fn new(listener: TcpListener, password: &str, handler: Arc<H>) -> Self {
        RconServer {
            listener,
            password: password.into(),
            handler,
        }
    }

    /// Accept connections until the task is dropped; each connection runs in its own task.
    pub async fn run(self) {
        loop {
            let (stream, remote) = match self.listener.accept().await {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!("RCON accept failed: {e}");
                    continue;
                }
            };
            let password = self.password.clone();
            let handler = self.handler.clone();
            tokio::spawn(async move {
                if let Err(e) = serve_connection(stream, remote, &password, &*handler).await {
                    tracing::debug!("RCON connection from {remote} ended: {e}");
                }
            });
        }
    }
}

async fn serve_connection<H: CommandHandler>(
    mut stream: TcpStream,
    remote: SocketAddr,
    password: &str,
    handler: &H,
) -> Result<(), FrameError> {
    let _ = stream.set_nodelay(true);
    let mut authenticated = false;
    loop {
        let frame = match Frame::read_from(&mut stream).await {
            Ok(frame) => frame,
            Err(FrameError::Closed) => return Ok(()),
            Err(e) => return Err(e),
        };
        match frame.kind {
            PacketType::Auth => {
                authenticated = frame.payload == password.as_bytes();
                let id = if authenticated { frame.id } else { -1 };
                // Exactly one AUTH_RESPONSE, as vanilla sends.
                Frame::new(id, PacketType::ExecOrAuthResponse, "")
                    .write_to(&mut stream)
                    .await?;
            }
            PacketType::ExecOrAuthResponse if authenticated => {
                let reply = handler.execute(remote, &frame.text()).await;
                write_reply(&mut stream, frame.id, reply.as_bytes()).await?;
            }
            // Vanilla drops a connection that sends commands without logging in.
            PacketType::ExecOrAuthResponse => return Ok(()),
            PacketType::ResponseValue | PacketType::Other(_) => {
                let text = format!("Unknown request {:x}", frame.kind.code());
                Frame::new(frame.id, PacketType::ResponseValue, text)
                    .write_to(&mut stream)
                    .await?;
            }
        }
    }
}

/// Split a reply into 4096-byte chunks under the request id (an empty reply is one empty chunk).
async fn write_reply(stream: &mut TcpStream, id: i32, reply: &[u8]) -> Result<(), FrameError> {
    if reply.is_empty() {
        Frame::new(id, PacketType::ResponseValue, "")
            .write_to(stream)
            .await?;
    }
    for chunk in reply.chunks(MAX_REPLY_CHUNK) {
        Frame::new(id, PacketType::ResponseValue, chunk)
            .write_to(stream)
            .await?;
    }
    Ok(())
}
