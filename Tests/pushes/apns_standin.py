# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the Countdown authors (see LICENSE and NOTICE)
"""A stand-in for the Apple Push Notification service, for the push tests.

Real TLS (a CA of its own, which `countdown serve` trusts through --apns-ca) and real HTTP/2
(the h2 library, ALPN "h2"), on loopback. It checks what APNs checks of a Live Activity push
(the method and path, `apns-topic`, `apns-push-type`, `apns-priority`, the provider JWT's
ES256 signature, key id, team id and age, the payload's size and its `aps`) and answers with
APNs's statuses and reasons. It also speaks iOS 18's broadcast channels: the channel
management API (`POST`, `GET` and `DELETE /1/apps/{bundleId}/channels`, `GET
/1/apps/{bundleId}/all-channels`, the id in `apns-channel-id`) and broadcasts (`POST
/4/broadcasts/apps/{bundleId}` with `apns-channel-id`, `400 BadChannelId` for a channel it does
not have), on the same port. A script per device token says what to answer next: a status
and reason, or a fault (`hang`: never answer; `reset`: RST_STREAM; `goaway`: GOAWAY and
close; `close`: drop the connection). `mode` makes the whole gateway misbehave: `garbage`
answers every connection with bytes that are not HTTP/2, `http1` agrees only on HTTP/1.1.
"""

import asyncio
import base64
import datetime
import json
import os
import re
import ssl
import threading
import time
import uuid

import h2.config
import h2.connection
import h2.events
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.x509.oid import NameOID

REFERENCE_EPOCH = 978307200  # 2001-01-01T00:00:00Z in Unix seconds


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_key_p8(path, curve=ec.SECP256R1()):
    """An APNs-like .p8: a PKCS#8 PEM EC private key. Returns the public key."""
    key = ec.generate_private_key(curve)
    with open(path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return key.public_key()


def make_tls(dir):
    """A CA and a certificate for 127.0.0.1 signed by it: ca.pem, server.pem, server.key."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "countdown test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(hours=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
                critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {n: os.path.join(dir, n) for n in ("ca.pem", "server.pem", "server.key")}
    with open(paths["ca.pem"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.pem"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths


class StandIn:
    """The gateway, on its own thread and asyncio loop."""

    def __init__(self, dir, public_key, key_id, team_id, bundle_id):
        self.public_key, self.key_id, self.team_id = public_key, key_id, team_id
        self.topic = bundle_id + ".push-type.liveactivity"
        self.tls = make_tls(dir)
        self.lock = threading.RLock()
        self.received = []      # accepted pushes: dicts of token, headers, payload, jwt, at
        self.requests = []      # every request, answered or not
        self.problems = []      # what a request got wrong (answered 400/403 as APNs would)
        self.script = {}        # token -> list of answers to give before 200
        self.refusing = None    # an answer to every request (a revoked key), or None
        self.bundle_id = bundle_id
        self.channels = {}      # channel id -> its storage policy, as created
        self.made = []          # every channel created, in order
        self.deleted = []       # every channel deleted, in order
        self.broadcasts = []    # accepted broadcasts: dicts of channel, headers, payload, at
        self.mode = "h2"
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def _context(self, protocols):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.tls["server.pem"], self.tls["server.key"])
        ctx.set_alpn_protocols(protocols)
        return ctx

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)

        async def start():
            self.ctx = self._context(["h2"])
            self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0,
                                                     ssl=self.ctx)
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def close(self):
        def stop():
            self.server.close()
            self.loop.stop()
        self.loop.call_soon_threadsafe(stop)
        self.thread.join(5)
        self.loop.close()

    def set_mode(self, mode):
        """h2, http1 or garbage, for connections made from now on."""
        protocols = {"h2": ["h2"], "http1": ["http/1.1"], "garbage": ["h2"]}[mode]
        done = threading.Event()

        def swap():
            # New connections take the context's ALPN list as it is when they shake hands.
            self.ctx.set_alpn_protocols(protocols)
            with self.lock:
                self.mode = mode
            done.set()
        self.loop.call_soon_threadsafe(swap)
        done.wait(5)

    def refuse_all(self, answer):
        """Answers every request with `answer` (status, reason) from now on, as APNs does for
        a key revoked or a topic the key may not use; None goes back to checking each."""
        with self.lock:
            self.refusing = answer

    def answer_next(self, token, *answers):
        """What to answer to `token`'s next requests, in order, before 200s."""
        with self.lock:
            self.script.setdefault(token, []).extend(answers)

    def pushes(self, token=None):
        with self.lock:
            return [p for p in self.received if token is None or p["token"] == token]

    def wait_for(self, predicate, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if predicate(self):
                    return True
            time.sleep(0.02)
        return False

    # -- the wire ---------------------------------------------------------------------------

    async def _connection(self, reader, writer):
        with self.lock:
            self.connections += 1
            mode = self.mode
        try:
            if mode == "garbage":
                await reader.read(1024)
                writer.write(b"\x00\x01garbage, not HTTP/2\r\n" * 64)
                await writer.drain()
                writer.close()
                return
            if mode == "http1":
                await reader.read(65536)
                body = b'{"reason":"this gateway speaks HTTP/1.1 only"}'
                writer.write(b"HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Length: %d\r\n"
                             b"Connection: close\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                writer.close()
                return
            await self._h2(reader, writer)
        except (ConnectionError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def _h2(self, reader, writer):
        conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        streams = {}
        while True:
            data = await reader.read(65536)
            if not data:
                return
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    streams[ev.stream_id] = {"headers": list(ev.headers), "body": b""}
                elif isinstance(ev, h2.events.DataReceived):
                    streams[ev.stream_id]["body"] += ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    request = streams.pop(ev.stream_id)
                    action = self._answer(request)
                    if action == "hang":
                        continue
                    if action == "close":
                        writer.close()
                        return
                    if action == "reset":
                        conn.reset_stream(ev.stream_id)
                    elif action == "goaway":
                        conn.close_connection(last_stream_id=ev.stream_id - 2 if ev.stream_id > 2 else 0)
                        writer.write(conn.data_to_send())
                        await writer.drain()
                        writer.close()
                        return
                    elif isinstance(action, dict):
                        # A channel request's answer: status, headers and maybe a body.
                        headers = [(":status", str(action["status"]))] + action.get("headers", [])
                        body = action.get("body")
                        if body is None:
                            conn.send_headers(ev.stream_id, headers, end_stream=True)
                        else:
                            conn.send_headers(ev.stream_id, headers + [
                                ("content-type", "application/json"),
                                ("content-length", str(len(body)))])
                            conn.send_data(ev.stream_id, body, end_stream=True)
                    else:
                        status, reason = action
                        # APNs echoes the request's apns-id, or makes one.
                        apns_id = dict(request["headers"]).get("apns-id") or str(uuid.uuid4())
                        headers = [(":status", str(status)), ("apns-id", apns_id)]
                        if status == 200:
                            conn.send_headers(ev.stream_id, headers, end_stream=True)
                        else:
                            body = json.dumps({"reason": reason}).encode()
                            conn.send_headers(ev.stream_id, headers + [
                                ("content-type", "application/json"),
                                ("content-length", str(len(body)))])
                            conn.send_data(ev.stream_id, body, end_stream=True)
            writer.write(conn.data_to_send())
            await writer.drain()

    def _answer(self, request):
        """Checks one request as APNs would and says how to answer it."""
        h = {}
        for k, v in request["headers"]:
            h.setdefault(k, v)
        path = h.get(":path", "")
        if path.startswith("/1/apps/") or path.startswith("/4/broadcasts/"):
            return self._channel_answer(h, path, request["body"])
        token = path[len("/3/device/"):] if path.startswith("/3/device/") else None
        record = {"token": token, "headers": h, "body": request["body"], "at": time.time()}
        with self.lock:
            self.requests.append(record)
            scripted = self.script.get(token) or []
            action = scripted.pop(0) if scripted else None
            if action is None and self.refusing is not None:
                action = self.refusing
        problem = self._check(h, token, request["body"])
        if problem:
            with self.lock:
                self.problems.append((problem, h, request["body"]))
            return problem
        if action is not None:
            return action
        record["payload"] = json.loads(request["body"])
        record["jwt"] = h["authorization"][len("bearer "):]
        with self.lock:
            self.received.append(record)
        return (200, None)

    def _check(self, h, token, body):
        if h.get(":method") != "POST" or token is None:
            return (405, "MethodNotAllowed") if h.get(":method") != "POST" else (404, "BadPath")
        if not token or len(token) % 2 or any(c not in "0123456789abcdef" for c in token):
            return (400, "BadDeviceToken")
        if h.get("apns-topic") != self.topic:
            return (400, "TopicDisallowed")
        if h.get("apns-push-type") != "liveactivity":
            return (400, "InvalidPushType")
        if h.get("apns-priority") not in ("5", "10"):
            return (400, "BadPriority")
        # apns-id: "a canonical UUID ... 8-4-4-4-12" (Apple's "Sending notification requests
        # to APNs"), else 400 BadMessageId; apns-expiration: a UNIX epoch in seconds, 0 for
        # "try once", else 400 BadExpirationDate.
        if "apns-id" in h and not re.fullmatch(
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", h["apns-id"]):
            return (400, "BadMessageId")
        if "apns-expiration" in h and not re.fullmatch(r"0|[1-9][0-9]{0,11}", h["apns-expiration"]):
            return (400, "BadExpirationDate")
        if h.get("content-length") != str(len(body)):
            return (400, "BadContentLength")
        problem = self._check_auth(h)
        if problem:
            return problem
        if len(body) > 4096:
            return (413, "PayloadTooLarge")
        try:
            payload = json.loads(body)
        except ValueError:
            return (400, "PayloadEmpty")
        aps = payload.get("aps") if isinstance(payload, dict) else None
        if not isinstance(aps, dict) or not isinstance(aps.get("timestamp"), int) \
                or aps.get("event") not in ("start", "update", "end") \
                or not isinstance(aps.get("content-state"), dict):
            return (400, "BadLiveActivityPayload")
        return None

    # -- broadcast channels ----------------------------------------------------------------

    def _channel_answer(self, h, path, body):
        """A channel management request or a broadcast, checked as APNs checks them. The
        script's keys: `create-channel`, `delete-channel`, `list-channels`, `channel:ID`."""
        method = h.get(":method")
        request_id = h.get("apns-request-id") or str(uuid.uuid4())
        echo = [("apns-request-id", request_id)]
        if path.startswith("/4/broadcasts/apps/"):
            key = "channel:" + h.get("apns-channel-id", "")
        elif path.endswith("/all-channels"):
            key = "list-channels"
        elif method == "POST":
            key = "create-channel"
        else:
            key = "delete-channel"
        record = {"token": key, "headers": h, "body": body, "at": time.time()}
        with self.lock:
            self.requests.append(record)
            scripted = self.script.get(key) or []
            action = scripted.pop(0) if scripted else None
            if action is None and self.refusing is not None:
                action = self.refusing
        problem = self._check_channel(h, path, method, body)
        if problem is not None:
            with self.lock:
                self.problems.append((problem, h, body))
        elif action is not None:
            if isinstance(action, str):
                return action
            problem = action
        if problem is not None:
            status, reason = problem
            return {"status": status, "headers": echo, "body": json.dumps({"reason": reason}).encode()}
        channel = h.get("apns-channel-id")
        with self.lock:
            if path.startswith("/4/broadcasts/"):
                record["channel"] = channel
                record["payload"] = json.loads(body)
                self.broadcasts.append(record)
                return {"status": 200, "headers": echo}
            if path.endswith("/all-channels"):
                listed = json.dumps({"channels": sorted(self.channels)}).encode()
                return {"status": 200, "headers": echo, "body": listed}
            if method == "POST":
                made = base64.b64encode(os.urandom(16)).decode()
                self.channels[made] = json.loads(body)["message-storage-policy"]
                self.made.append(made)
                return {"status": 201, "headers": echo + [("apns-channel-id", made)]}
            if method == "GET":
                policy = json.dumps({"message-storage-policy": self.channels[channel],
                                     "push-type": "LiveActivity"}).encode()
                return {"status": 200, "headers": echo, "body": policy}
            del self.channels[channel]
            self.deleted.append(channel)
            return {"status": 204, "headers": echo}

    def _check_channel(self, h, path, method, body):
        broadcast = path.startswith("/4/broadcasts/apps/")
        prefix = "/4/broadcasts/apps/" if broadcast else "/1/apps/"
        rest = path[len(prefix):]
        bundle, _, resource = rest.partition("/")
        if bundle != self.bundle_id:
            return (400, "BadPath") if not broadcast else (400, "TopicDisallowed")
        if broadcast and resource:
            return (404, "BadPath")
        if not broadcast and resource not in ("channels", "all-channels"):
            return (404, "BadPath")
        allowed = {"channels": ("POST", "GET", "DELETE"), "all-channels": ("GET",)}
        if (broadcast and method != "POST") or (not broadcast and method not in allowed[resource]):
            return (405, "MethodNotAllowed")
        if "apns-request-id" in h and not re.fullmatch(
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", h["apns-request-id"]):
            return (400, "BadMessageId")
        problem = self._check_auth(h)
        if problem:
            return problem
        channel = h.get("apns-channel-id")
        needs_channel = broadcast or (resource == "channels" and method in ("GET", "DELETE"))
        if needs_channel:
            if not channel:
                return (400, "MissingChannelId")
            try:
                base64.b64decode(channel, validate=True)
            except ValueError:
                return (400, "BadChannelId")
            with self.lock:
                known = channel in self.channels
            if not known:
                return (400, "BadChannelId") if broadcast else (404, "ChannelNotRegistered")
        if broadcast:
            if h.get("apns-push-type") != "liveactivity":
                return (400, "InvalidPushType")
            if h.get("apns-priority") not in ("5", "10"):
                return (400, "BadPriority")
            if "apns-expiration" in h and not re.fullmatch(r"0|[1-9][0-9]{0,11}", h["apns-expiration"]):
                return (400, "BadExpirationDate")
            if h.get("content-length") != str(len(body)):
                return (400, "BadContentLength")
            if len(body) > 4096:
                return (413, "PayloadTooLarge")
            try:
                aps = json.loads(body).get("aps")
            except (ValueError, AttributeError):
                return (400, "PayloadEmpty")
            if not isinstance(aps, dict) or aps.get("event") not in ("update", "end") \
                    or not isinstance(aps.get("content-state"), dict):
                return (400, "BadLiveActivityPayload")
        elif method == "POST":
            try:
                asked = json.loads(body)
            except ValueError:
                return (400, "BadRequest")
            if asked.get("push-type") != "LiveActivity":
                return (400, "InvalidPushType")
            if asked.get("message-storage-policy") not in (0, 1):
                return (400, "BadMessageStoragePolicy")
        return None

    def _check_auth(self, h):
        auth = h.get("authorization", "")
        if not auth.startswith("bearer "):
            return (403, "MissingProviderToken")
        problem = self._check_jwt(auth[len("bearer "):])
        return (403, problem) if problem else None

    def _check_jwt(self, jwt):
        try:
            head64, claims64, sig64 = jwt.split(".")
            header = json.loads(b64url_decode(head64))
            claims = json.loads(b64url_decode(claims64))
            sig = b64url_decode(sig64)
        except ValueError:
            return "InvalidProviderToken"
        if header.get("alg") != "ES256" or header.get("kid") != self.key_id:
            return "InvalidProviderToken"
        if claims.get("iss") != self.team_id or not isinstance(claims.get("iat"), int):
            return "InvalidProviderToken"
        if len(sig) != 64:
            return "InvalidProviderToken"
        der = utils.encode_dss_signature(int.from_bytes(sig[:32], "big"),
                                         int.from_bytes(sig[32:], "big"))
        try:
            self.public_key.verify(der, (head64 + "." + claims64).encode(),
                                   ec.ECDSA(hashes.SHA256()))
        except Exception:
            return "InvalidProviderToken"
        if abs(time.time() - claims["iat"]) > 3600:
            return "ExpiredProviderToken"
        return None
