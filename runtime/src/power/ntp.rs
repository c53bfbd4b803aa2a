//! An NTP server stand-in for tests (never submittable): answers NTPv4 client requests with this
//! host's clock, so power-dev's client and server, which both check their offset against an NTP
//! server before every phase, can run on a machine without one. A reply is RFC 5905's server
//! packet: stratum 1, the request's transmit time as its originate time, receive and transmit
//! times from the system clock.

use std::net::UdpSocket;
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds from NTP's epoch (1900) to Unix's (1970).
const NTP_TO_UNIX: u64 = 2_208_988_800;
const PACKET: usize = 48;

/// `at` as an NTP timestamp: seconds since 1900, 32 bits, then the fraction, 32 bits.
fn timestamp(at: SystemTime) -> [u8; 8] {
    let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    let seconds = (since.as_secs() + NTP_TO_UNIX) as u32;
    let fraction = ((u64::from(since.subsec_nanos()) << 32) / 1_000_000_000) as u32;
    let mut out = [0; 8];
    out[..4].copy_from_slice(&seconds.to_be_bytes());
    out[4..].copy_from_slice(&fraction.to_be_bytes());
    out
}

/// The reply to `request` (a client packet, mode 3) received at `received`, sent at `sent`; `None`
/// for anything else.
pub fn reply(request: &[u8], received: SystemTime, sent: SystemTime) -> Option<[u8; PACKET]> {
    if request.len() < PACKET || request[0] & 0x07 != 3 {
        return None;
    }
    let version = (request[0] >> 3) & 0x07;
    let mut out = [0u8; PACKET];
    out[0] = (version << 3) | 4; // no leap warning, the client's version, mode 4 (server)
    out[1] = 1; // stratum 1: a primary reference
    out[2] = request[2]; // the client's poll interval
    out[3] = (-20i8) as u8; // precision about a microsecond
    out[12..16].copy_from_slice(b"LOCL");
    out[16..24].copy_from_slice(&timestamp(received));
    out[24..32].copy_from_slice(&request[40..48]);
    out[32..40].copy_from_slice(&timestamp(received));
    out[40..48].copy_from_slice(&timestamp(sent));
    Some(out)
}

/// Answers requests on `socket` until an error or until `stop` says so (checked between packets).
pub fn serve(socket: &UdpSocket, stop: &dyn Fn() -> bool) -> std::io::Result<()> {
    socket.set_read_timeout(Some(std::time::Duration::from_millis(200)))?;
    let mut buffer = [0u8; 512];
    while !stop() {
        let (len, from) = match socket.recv_from(&mut buffer) {
            Ok(got) => got,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => continue,
            Err(e) => return Err(e),
        };
        let received = SystemTime::now();
        if let Some(packet) = reply(&buffer[..len], received, SystemTime::now()) {
            socket.send_to(&packet, from)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_client_request_gets_a_server_reply_with_its_own_transmit_time() {
        let mut request = [0u8; PACKET];
        request[0] = (4 << 3) | 3;
        request[2] = 6;
        request[40..48].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let at = UNIX_EPOCH + Duration::new(1_764_378_000, 500_000_000);
        let out = reply(&request, at, at).unwrap();
        assert_eq!((out[0], out[1], out[2]), ((4 << 3) | 4, 1, 6));
        assert_eq!(&out[24..32], &[1, 2, 3, 4, 5, 6, 7, 8], "originate = the request's transmit");
        // 1,764,378,000 s after 1970 is 3,973,366,800 s after 1900; half a second is 2^31.
        assert_eq!(u32::from_be_bytes(out[40..44].try_into().unwrap()), 3_973_366_800);
        assert_eq!(u32::from_be_bytes(out[44..48].try_into().unwrap()), 1 << 31);
        request[0] = (4 << 3) | 4;
        assert!(reply(&request, at, at).is_none(), "a server packet is not answered");
        assert!(reply(&request[..20], at, at).is_none());
    }

    #[test]
    fn it_answers_over_udp() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let address = server.local_addr().unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| serve(&server, &|| done.load(std::sync::atomic::Ordering::SeqCst)).unwrap());
            let client = UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut request = [0u8; PACKET];
            request[0] = (4 << 3) | 3;
            client.send_to(&request, address).unwrap();
            let mut buffer = [0u8; 64];
            client.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let (len, _) = client.recv_from(&mut buffer).unwrap();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            assert_eq!((len, buffer[0] & 7), (PACKET, 4));
            let seconds = u64::from(u32::from_be_bytes(buffer[40..44].try_into().unwrap())) - NTP_TO_UNIX;
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
            assert!(now.abs_diff(seconds) <= 2, "the host's clock");
        });
    }
}
