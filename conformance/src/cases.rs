//! The click counter's contract as one conversation: every endpoint and
//! every bad input of the text body, with the status and body each must
//! get. The twins are held to it (`tests/endpoints.rs`), and so is any
//! server from elsewhere that claims the contract (`tests/external.rs`).

/// One step of a conversation: what is sent and what must come back.
pub struct Case {
    pub name: &'static str,
    pub raw: Vec<u8>,
    pub status: u16,
    pub body: Option<Vec<u8>>,
}

/// A request with an optional body and its length.
pub fn req(method: &str, path: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: t\r\n").into_bytes();
    match body {
        Some(b) => {
            raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", b.len()).as_bytes());
            raw.extend_from_slice(b);
        }
        None => raw.extend_from_slice(b"\r\n"),
    }
    raw
}

/// A chunked POST / of `chunks`.
pub fn chunked(chunks: &[&[u8]]) -> Vec<u8> {
    let mut raw = b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for c in chunks {
        raw.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
        raw.extend_from_slice(c);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"0\r\n\r\n");
    raw
}

/// A case from its parts.
pub fn case(name: &'static str, raw: Vec<u8>, status: u16, body: Option<&[u8]>) -> Case {
    Case {
        name,
        raw,
        status,
        body: body.map(<[u8]>::to_vec),
    }
}

/// Every text endpoint and bad input, in an order that keeps one
/// keep-alive connection (the 413s, which may close it, come last).
pub fn text_cases() -> Vec<Case> {
    let too_big = vec![b'1'; 65];
    let big_chunk = vec![b'2'; 40];
    vec![
        case("fresh count", req("GET", "/", None), 200, Some(b"0")),
        case("add 500", req("POST", "/", Some(b"500")), 200, Some(b"500")),
        case("add 7", req("POST", "/", Some(b"7")), 200, Some(b"507")),
        case(
            "leading zeros",
            req("POST", "/", Some(b"003")),
            200,
            Some(b"510"),
        ),
        case("zero", req("POST", "/", Some(b"0")), 200, Some(b"510")),
        case("chunked", chunked(&[b"2", b"5"]), 200, Some(b"535")),
        case(
            "empty",
            req("POST", "/", Some(b"")),
            400,
            Some(b"body is empty\n"),
        ),
        case(
            "no body at all",
            req("POST", "/", None),
            400,
            Some(b"body is empty\n"),
        ),
        case(
            "letters",
            req("POST", "/", Some(b"abc")),
            400,
            Some(b"body is not a plain decimal integer\n"),
        ),
        case(
            "minus",
            req("POST", "/", Some(b"-5")),
            400,
            Some(b"body is not a plain decimal integer\n"),
        ),
        case(
            "plus",
            req("POST", "/", Some(b"+5")),
            400,
            Some(b"body is not a plain decimal integer\n"),
        ),
        case(
            "newline",
            req("POST", "/", Some(b"5\n")),
            400,
            Some(b"body is not a plain decimal integer\n"),
        ),
        case(
            "over 500",
            req("POST", "/", Some(b"501")),
            400,
            Some(b"value is over 500\n"),
        ),
        case(
            "999",
            req("POST", "/", Some(b"999")),
            400,
            Some(b"value is over 500\n"),
        ),
        case(
            "4 digits",
            req("POST", "/", Some(b"0500")),
            400,
            Some(b"body has too many bytes for a value 0..=500\n"),
        ),
        case(
            "64 bytes",
            req("POST", "/", Some(&[b'1'; 64])),
            400,
            Some(b"body has too many bytes for a value 0..=500\n"),
        ),
        case(
            "put",
            req("PUT", "/", Some(b"5")),
            405,
            Some(b"method not allowed: use GET or POST on /\n"),
        ),
        case(
            "delete",
            req("DELETE", "/", None),
            405,
            Some(b"method not allowed: use GET or POST on /\n"),
        ),
        case(
            "patch",
            req("PATCH", "/", Some(b"5")),
            405,
            Some(b"method not allowed: use GET or POST on /\n"),
        ),
        case(
            "other path",
            req("GET", "/count", None),
            404,
            Some(b"not found: the only resource is /\n"),
        ),
        case(
            "post other path",
            req("POST", "/x", Some(b"5")),
            404,
            Some(b"not found: the only resource is /\n"),
        ),
        case(
            "unchanged by errors",
            req("GET", "/", None),
            200,
            Some(b"535"),
        ),
        // Each 413 may close the connection, so they come last.
        case(
            "declared too large",
            req("POST", "/", Some(&too_big)),
            413,
            Some(b"body is larger than the server's limit\n"),
        ),
        case(
            "chunked too large",
            chunked(&[&big_chunk, &big_chunk]),
            413,
            Some(b"body is larger than the server's limit\n"),
        ),
    ]
}
