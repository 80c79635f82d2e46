//! The node's DNS server: authoritative A records for `cluster.local`, over UDP and TCP on
//! port 53 of the node's DNS address (the Service range's base + 10, like kube-dns).
//!
//! Records come from Services and their EndpointSlices ([`super::Records`]): a Service's
//! cluster IP, a headless Service's ready endpoints, and `<hostname>.<svc>.<ns>.svc.cluster.local`
//! for endpoints with a hostname (StatefulSet pods). Every other name gets NXDOMAIN; a known
//! name asked for another type (AAAA) gets an empty NOERROR answer, so resolvers asking for
//! both do not give up. There is no upstream: the node's network is the loopback only.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, UdpSocket};

use super::Records;

/// Seconds a client may cache an answer (CoreDNS's kubernetes plugin default).
const TTL: u32 = 5;
const TYPE_A: u16 = 1;
const CLASS_IN: u16 = 1;
const NOERROR: u8 = 0;
const FORMERR: u8 = 1;
const NXDOMAIN: u8 = 3;
const NOTIMP: u8 = 4;

/// A parsed question.
#[derive(Debug, PartialEq, Eq)]
struct Question {
    /// Lowercase, without the trailing dot.
    name: String,
    qtype: u16,
    qclass: u16,
    /// Where the question ends in the message.
    end: usize,
}

fn parse_question(msg: &[u8]) -> Option<Question> {
    if msg.len() < 12 || u16::from_be_bytes([msg[4], msg[5]]) == 0 {
        return None;
    }
    let mut labels = Vec::new();
    let mut at = 12;
    loop {
        let len = *msg.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 {
            return None; // compression pointers do not occur in questions
        }
        let label = msg.get(at..at + len)?;
        labels.push(String::from_utf8_lossy(label).to_ascii_lowercase());
        at += len;
    }
    let qtype = u16::from_be_bytes([*msg.get(at)?, *msg.get(at + 1)?]);
    let qclass = u16::from_be_bytes([*msg.get(at + 2)?, *msg.get(at + 3)?]);
    Some(Question {
        name: labels.join("."),
        qtype,
        qclass,
        end: at + 4,
    })
}

fn header(query: &[u8], rcode: u8, questions: u16, answers: u16) -> Vec<u8> {
    let id = [
        query.first().copied().unwrap_or(0),
        query.get(1).copied().unwrap_or(0),
    ];
    let flags_in = query.get(2).copied().unwrap_or(0);
    // QR, the query's opcode and RD; AA; RA.
    let hi = 0x80 | (flags_in & 0x78) | 0x04 | (flags_in & 0x01);
    let lo = 0x80 | (rcode & 0x0f);
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(&id);
    out.extend_from_slice(&[hi, lo]);
    out.extend_from_slice(&questions.to_be_bytes());
    out.extend_from_slice(&answers.to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out
}

/// The answer to one DNS message; `None` drops it (too short to even echo an ID).
pub fn answer(records: &Records, query: &[u8]) -> Option<Vec<u8>> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None;
    }
    let opcode = (query[2] >> 3) & 0x0f;
    if opcode != 0 {
        return Some(header(query, NOTIMP, 0, 0));
    }
    let Some(q) = parse_question(query) else {
        return Some(header(query, FORMERR, 0, 0));
    };
    let (rcode, ips): (u8, Vec<Ipv4Addr>) = match records.lookup(&q.name) {
        None => (NXDOMAIN, Vec::new()),
        Some(_) if q.qclass != CLASS_IN || q.qtype != TYPE_A => (NOERROR, Vec::new()),
        Some(ips) => (NOERROR, ips),
    };
    let mut out = header(query, rcode, 1, ips.len() as u16);
    out.extend_from_slice(&query[12..q.end]);
    for ip in ips {
        // The name is a pointer to the question (offset 12).
        out.extend_from_slice(&[0xc0, 0x0c]);
        out.extend_from_slice(&TYPE_A.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&TTL.to_be_bytes());
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&ip.octets());
    }
    Some(out)
}

/// Serves DNS on UDP and TCP port `addr` until the returned tasks are aborted.
pub async fn serve(
    addr: SocketAddr,
    records: Arc<Records>,
) -> std::io::Result<Vec<tokio::task::JoinHandle<()>>> {
    let udp = UdpSocket::bind(addr).await?;
    let tcp = TcpListener::bind(addr).await?;
    let udp_records = records.clone();
    let udp_task = tokio::spawn(async move {
        let mut buf = vec![0u8; 4096];
        loop {
            let Ok((n, peer)) = udp.recv_from(&mut buf).await else {
                continue;
            };
            if let Some(reply) = answer(&udp_records, &buf[..n]) {
                let _ = udp.send_to(&reply, peer).await;
            }
        }
    });
    let tcp_task = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = tcp.accept().await else {
                continue;
            };
            let records = records.clone();
            tokio::spawn(async move {
                // Length-prefixed messages until the client closes.
                loop {
                    let mut len = [0u8; 2];
                    if stream.read_exact(&mut len).await.is_err() {
                        return;
                    }
                    let mut msg = vec![0u8; u16::from_be_bytes(len) as usize];
                    if stream.read_exact(&mut msg).await.is_err() {
                        return;
                    }
                    let Some(reply) = answer(&records, &msg) else {
                        return;
                    };
                    let mut framed = (reply.len() as u16).to_be_bytes().to_vec();
                    framed.extend_from_slice(&reply);
                    if stream.write_all(&framed).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(vec![udp_task, tcp_task])
}

/// A query for `name` (type A, RD set), as a stub resolver sends it.
pub fn query(id: u16, name: &str, qtype: u16) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.trim_end_matches('.').split('.') {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&CLASS_IN.to_be_bytes());
    out
}

/// The response code and A records of a response.
pub fn parse_response(msg: &[u8]) -> Option<(u8, Vec<Ipv4Addr>)> {
    let q = parse_question(msg)?;
    let rcode = msg[3] & 0x0f;
    let count = u16::from_be_bytes([msg[6], msg[7]]);
    let mut at = q.end;
    let mut ips = Vec::new();
    for _ in 0..count {
        // Names here are the 2-byte pointer this server writes.
        let rtype = u16::from_be_bytes([*msg.get(at + 2)?, *msg.get(at + 3)?]);
        let len = u16::from_be_bytes([*msg.get(at + 10)?, *msg.get(at + 11)?]) as usize;
        let data = msg.get(at + 12..at + 12 + len)?;
        if rtype == TYPE_A && len == 4 {
            ips.push(Ipv4Addr::new(data[0], data[1], data[2], data[3]));
        }
        at += 12 + len;
    }
    Some((rcode, ips))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Records {
        let r = Records::default();
        r.replace(
            [
                (
                    "web.default.svc.cluster.local".to_string(),
                    vec![Ipv4Addr::new(127, 20, 192, 16)],
                ),
                (
                    "db.default.svc.cluster.local".to_string(),
                    vec![Ipv4Addr::new(127, 20, 0, 3), Ipv4Addr::new(127, 20, 0, 4)],
                ),
            ]
            .into_iter()
            .collect(),
        );
        r
    }

    #[test]
    fn answers_a_records_case_insensitively() {
        let reply = answer(
            &records(),
            &query(7, "Web.Default.svc.cluster.local.", TYPE_A),
        )
        .unwrap();
        assert_eq!(&reply[..2], &7u16.to_be_bytes());
        assert_eq!(
            parse_response(&reply),
            Some((NOERROR, vec![Ipv4Addr::new(127, 20, 192, 16)]))
        );
        let reply = answer(
            &records(),
            &query(8, "db.default.svc.cluster.local", TYPE_A),
        )
        .unwrap();
        assert_eq!(parse_response(&reply).unwrap().1.len(), 2);
    }

    #[test]
    fn unknown_names_are_nxdomain_and_other_types_empty() {
        let reply = answer(
            &records(),
            &query(1, "nope.default.svc.cluster.local", TYPE_A),
        )
        .unwrap();
        assert_eq!(parse_response(&reply), Some((NXDOMAIN, vec![])));
        let reply = answer(&records(), &query(2, "web.default.svc.cluster.local", 28)).unwrap();
        assert_eq!(parse_response(&reply), Some((NOERROR, vec![])));
    }

    #[test]
    fn garbage_is_formerr_or_dropped() {
        assert_eq!(answer(&records(), &[1, 2, 3]), None);
        let mut bad = query(3, "web.default.svc.cluster.local", TYPE_A);
        bad.truncate(20);
        assert_eq!(answer(&records(), &bad).unwrap()[3] & 0x0f, FORMERR);
    }
}
