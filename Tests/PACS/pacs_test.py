#!/usr/bin/env python3
"""`make test-pacs`: SliceLab against a real PACS (Debian's Orthanc), every process inside a private network
namespace so nothing listens beyond it (Orthanc 1.10 binds every interface and has no option not to).

Re-executes itself under `unshare -n` (skipping with the reason where that is not permitted), brings `lo` up,
starts Orthanc with its own configuration in a temporary folder (storage, DicomModalities naming SliceLab,
RemoteAccessAllowed false), and checks the node's commands with DCMTK's tools and Orthanc's REST API as second
peers, over DIMSE and DICOMweb (Orthanc's plugin): push the bundled demo series (every instance stored; DCMTK's
`storescp` receives the same data sets), query them at study and series
level (the answer is Orthanc's own, and DCMTK's `findscu` finds the same), pull each series and the study back
(the files' data sets equal what was pushed, element for element) by C-GET, C-MOVE and WADO-RS, segment a pulled
series and push the SEG back, and refuse a calling AE title the PACS does not know. A second Orthanc requires TLS
and a client certificate (a test CA made with openssl): push, query, C-GET and C-MOVE over TLS, QIDO-RS over HTTPS
(a TLS proxy in front of it), `listen` over TLS, and the refusals. Then `listen` under kill -9, a destination down,
and bad callers. Every Orthanc, listener and proxy is stopped at the end.

Usage: pacs_test.py SLICELAB_BINARY   (python: the .venv's, which has pydicom)
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import warnings

import pydicom

# The test writes a malformed instance on purpose (a Series Instance UID holding ../).
warnings.filterwarnings("ignore", message="Invalid value for VR UI")

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = ROOT / "Sources/SliceLabKit/Resources/Demo/mni-brain/images"
MODEL = ROOT / "Sources/SliceLabKit/Resources/Demo/models/mni-brain.h5"
ORTHANC = shutil.which("Orthanc") or "/usr/sbin/Orthanc"
DICOM_PORT, HTTP_PORT = 4242, 8042
REMOTE = f"dicom://ORTHANC@127.0.0.1:{DICOM_PORT}"
WEB = f"dicomweb://127.0.0.1:{HTTP_PORT}/dicom-web"


def run(*arguments, expect=0, timeout=120):
    result = subprocess.run([str(a) for a in arguments], capture_output=True, text=True, timeout=timeout)
    if expect is not None and result.returncode != expect:
        sys.exit(f"pacs: {' '.join(map(str, arguments))} exited {result.returncode}, expected {expect}:\n"
                 f"{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result


def rest(path, port=HTTP_PORT):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return json.loads(response.read())


def start_orthanc(folder, name="orthanc", dicom_port=DICOM_PORT, http_port=HTTP_PORT, tls=None):
    """Orthanc with its storage under folder/name; with `tls` (a folder of ca.crt, server.key and server.crt) every
    DICOM association is TLS, callers must present a certificate of that CA, SliceLab's move destination (SLICELAB
    at port 11114) is reached over TLS."""
    config = {
        "Name": "SliceLabPACSTest", "StorageDirectory": str(folder / name / "storage"),
        "IndexDirectory": str(folder / name / "index"),
        "DicomAet": name.upper(), "DicomPort": dicom_port, "HttpPort": http_port, "RemoteAccessAllowed": False,
        "AuthenticationEnabled": False, "DicomCheckCalledAet": True,
        "DicomModalities": {"slicelab": ["SLICELAB", "127.0.0.1", 11112]},
        "Plugins": ["/usr/share/orthanc/plugins/libOrthancDicomWeb.so"], "StableAge": 1,
        "DicomWeb": {"Enable": True, "Root": "/dicom-web/", "Host": f"127.0.0.1:{http_port}", "Ssl": False},
    }
    if tls:
        config.update({"DicomTlsEnabled": True, "DicomTlsCertificate": str(tls / "server.crt"),
                       "DicomTlsPrivateKey": str(tls / "server.key"), "DicomTlsTrustedCertificates": str(tls / "ca.crt"),
                       "DicomTlsRemoteCertificateRequired": True,
                       "DicomModalities": {"slicelab": {"AET": "SLICELAB", "Host": "127.0.0.1", "Port": 11114,
                                                        "UseDicomTls": True}}})
    (folder / f"{name}.json").write_text(json.dumps(config))
    log = open(folder / f"{name}.log", "w")
    process = subprocess.Popen([ORTHANC, str(folder / f"{name}.json")], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        try:
            rest("/system", http_port)
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    sys.exit(f"pacs: Orthanc did not answer within 10 s; its log:\n{(folder / f'{name}.log').read_text()[-3000:]}")


def datasets_equal(a, b):
    """Every element of two files' data sets (not their file meta) equal."""
    x, y = pydicom.dcmread(a), pydicom.dcmread(b)
    return [e.tag for e in x] == [e.tag for e in y] and all(x[t].value == y[t].value for t in [e.tag for e in x])


def main():
    slicelab = pathlib.Path(sys.argv[1]).resolve()
    if os.environ.get("SLICELAB_PACS_NAMESPACE") != "1":
        if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
            print("pacs: skipped: unshare -n is not permitted here (a private network namespace keeps Orthanc, which "
                  "listens on every interface, off the network)")
            return
        env = dict(os.environ, SLICELAB_PACS_NAMESPACE="1")
        sys.exit(subprocess.run(["unshare", "-n", sys.executable, __file__, str(slicelab)], env=env).returncode)
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    folder = pathlib.Path(tempfile.mkdtemp(prefix="slicelab-pacs-"))
    orthanc = [start_orthanc(folder)]
    try:
        checks(slicelab, folder)
        move_checks(slicelab, folder)
        tls_checks(slicelab, folder)
        listen_checks(slicelab, folder, orthanc)
    finally:
        for listener in LISTENERS:
            stop(listener, kill=True)
        stop(orthanc[0])
        for process in ORTHANCS:
            stop(process)
        if os.environ.get("SLICELAB_PACS_KEEP") == "1":
            print(f"pacs: kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    print("pacs: ok")


def stop(process, kill=False):
    if process.poll() is not None:
        return process.returncode
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def wait_for(condition, what, seconds=900):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.3)
    sys.exit(f"pacs: timed out after {seconds} s waiting for {what}")


def seg_instances():
    return sorted(i for s in rest("/series") if rest(f"/series/{s}")["MainDicomTags"].get("Modality") == "SEG"
                  for i in rest(f"/series/{s}")["Instances"])


LISTEN_PORT = 11112
LISTENERS = []  # every listener started, stopped by PID at the end whatever happened


def start_listener(slicelab, folder, spool, log_name, port=LISTEN_PORT, caller="STORESCU", send_to=REMOTE,
                   options=("--series-idle", "1", "--max-attempts", "30"), echo_options=()):
    """`slicelab listen` as SLICELAB on `port` letting `caller` in, registered in LISTENERS, once it answers a
    C-ECHO from `caller` (`echo_options`: echoscu's TLS arguments, for a TLS listener)."""
    log = open(folder / log_name, "a")
    process = subprocess.Popen(
        [str(slicelab), "listen", "--port", str(port), "--aet", "SLICELAB", "--allow-aet", caller, "--model",
         str(MODEL), "--send-to", send_to, "--spool", str(spool), *map(str, options)], stdout=log, stderr=log)
    LISTENERS.append(process)
    wait_for(lambda: subprocess.run(["echoscu", *echo_options, "-aet", caller, "-aec", "SLICELAB", "127.0.0.1",
                                     str(port)], capture_output=True).returncode == 0 or process.poll() is not None,
             "the listener to answer C-ECHO", 60)
    assert process.poll() is None, (folder / log_name).read_text()[-3000:]
    return process


def storescu(files, aet="STORESCU", expect=0):
    return run("storescu", "-aet", aet, "-aec", "SLICELAB", "127.0.0.1", LISTEN_PORT, *files, expect=expect)


def listen_checks(slicelab, folder, orthanc):
    """`slicelab listen`: series sent by storescu are segmented and their SEGs arrive at Orthanc exactly once,
    through kill -9 and restart, a destination down for a while, an unknown AE title and a malformed instance."""
    files = sorted(DEMO.glob("*.dcm"))
    series = sorted({pydicom.dcmread(f).SeriesInstanceUID for f in files})
    spool = folder / "spool"
    before = seg_instances()
    listener = start_listener(slicelab, folder, spool, "listen.log")
    storescu(files)
    wait_for(lambda: len(seg_instances()) == len(before) + len(series), f"{len(series)} SEGs at Orthanc")
    delivered = seg_instances()
    print(f"pacs: listen segmented {len(series)} series sent by storescu; their SEGs arrived at Orthanc")

    # kill -9 right after one series' instances are acknowledged, restart: delivered again, replacing, never
    # duplicating.
    first_series = [f for f in files if pydicom.dcmread(f).SeriesInstanceUID == series[0]]
    storescu(first_series)
    assert stop(listener, kill=True) == -signal.SIGKILL
    listener = start_listener(slicelab, folder, spool, "listen.log")
    sent_events = lambda: (folder / "listen.log").read_text().count('"event":"sent"')
    wait_for(lambda: sent_events() >= len(series) + 1, "the resent series to be delivered after kill -9 and restart")
    assert seg_instances() == delivered, (seg_instances(), delivered)
    print("pacs: after kill -9 and a restart every acknowledged series was segmented and delivered, each SEG once")

    # The destination down for a while: the result waits, retries, and arrives once it is back.
    stop(orthanc[0])
    moved = folder / "moved"
    moved.mkdir()
    dataset = pydicom.dcmread(files[0])
    dataset.SeriesInstanceUID, dataset.SOPInstanceUID = dataset.SeriesInstanceUID + ".7", dataset.SOPInstanceUID + ".7"
    dataset.file_meta.MediaStorageSOPInstanceUID = dataset.SOPInstanceUID
    dataset.save_as(moved / "one.dcm")
    storescu([moved / "one.dcm"])
    wait_for(lambda: json.loads((spool / "status.json").read_text()).get("results_failing", 0) >= 1,
             "the send to the stopped PACS to fail")
    orthanc[0] = start_orthanc(folder)
    wait_for(lambda: len(seg_instances()) == len(delivered) + 1, "the queued result once the PACS is back", 180)
    print("pacs: with the PACS stopped the result waited and retried; it arrived once the PACS was back")

    # An unknown AE title is rejected at association; a malformed instance gets a failure status; the node serves on.
    storescu(files[:1], aet="INTRUDER", expect=None)
    bad = pydicom.dcmread(files[1])
    bad.StudyInstanceUID = "1.2.3.4"
    bad.SeriesInstanceUID = "1.2/../../etc"
    bad.save_as(moved / "bad.dcm")
    result = storescu([moved / "bad.dcm"], expect=None)
    storescu(files[:1])
    log = (folder / "listen.log").read_text()
    assert '"event": "rejected"' in log and '"calling_aet": "INTRUDER"' in log, log[-2000:]
    assert '"event": "refused"' in log and "not a UID" in log, log[-2000:]
    assert not any(".." in str(p) for p in spool.rglob("*")), list(spool.rglob("*"))
    status = json.loads(run(slicelab, "listen", "--spool", spool, "--status").stdout)
    assert status["dead_letters"] == 0 and status["results_sent"] == len(series) + 1, status
    assert stop(listener) == 0, "SIGTERM should end the listener cleanly"
    print("pacs: an unknown AE title and a malformed instance were refused with a log line each; SIGTERM stopped it")


ORTHANCS = []  # further Orthancs started, stopped by PID at the end


def move_checks(slicelab, folder):
    """pull by C-MOVE: SliceLab listens as the move destination Orthanc knows (SLICELAB at port 11112) while it
    pulls; the files equal the pushed ones; a destination Orthanc does not know fails with the peer's count."""
    files = sorted(DEMO.glob("*.dcm"))
    demo = {pydicom.dcmread(f).SOPInstanceUID: f for f in files}
    series = sorted({pydicom.dcmread(f).SeriesInstanceUID for f in files})
    out = folder / "moved-pull"
    result = run(slicelab, "pull", REMOTE, *series, "--out", out, "--move-destination", "SLICELAB", "--port", 11112)
    moved = sorted(out.rglob("*.dcm"))
    assert len(moved) == len(files), (moved, result.stderr)
    for path in moved:
        assert datasets_equal(path, demo[path.stem]), f"{path} (C-MOVE) differs from {demo[path.stem]}"
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [], list(out.iterdir())
    unknown = run(slicelab, "pull", REMOTE, series[0], "--out", folder / "moved-nowhere", "--move-destination",
                  "NOBODY", "--port", 11112, expect=None)
    assert unknown.returncode != 0 and "NOBODY" not in str(list((folder / "moved-nowhere").rglob("*.dcm"))), \
        unknown.stderr
    print(f"pacs: pull by C-MOVE received {len(moved)} instances as SLICELAB, data sets equal to the pushed ones; a "
          "destination Orthanc does not know failed")


def https_proxy(port, target, certs):
    """HTTPS on `port` in front of plain HTTP on `target`, in a thread (Debian's Orthanc 1.10.1 ends its process on
    the first HTTPS connection here, so its own SslEnabled cannot serve)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs / "server.crt", certs / "server.key")

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            try:
                client = context.wrap_socket(self.request, server_side=True)
            except (ssl.SSLError, OSError):
                return
            with client, socket.create_connection(("127.0.0.1", target)) as upstream:
                pump = lambda a, b: [b.sendall(chunk) for chunk in iter(lambda: a.recv(65536), b"")]
                threading.Thread(target=lambda: (pump(upstream, client), client.close()), daemon=True).start()
                try:
                    pump(client, upstream)
                except OSError:
                    pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def make_certificates(folder):
    """A test CA, and a server and a client certificate it signed (RSA 2048, valid two days)."""
    folder.mkdir()
    openssl = lambda *a: run("openssl", *a)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder / "ca.key", "-out", folder / "ca.crt",
            "-days", "2", "-subj", "/CN=SliceLab test CA")
    (folder / "san.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name in ("server", "client"):
        openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", folder / f"{name}.key", "-out",
                folder / f"{name}.csr", "-subj", f"/CN={name}")
        openssl("x509", "-req", "-in", folder / f"{name}.csr", "-CA", folder / "ca.crt", "-CAkey", folder / "ca.key",
                "-CAcreateserial", "-out", folder / f"{name}.crt", "-days", "2", "-extfile", folder / "san.ext")
    # A CA SliceLab is not told to trust.
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", folder / "other.key", "-out",
            folder / "other.crt", "-days", "2", "-subj", "/CN=Another CA")


def tls_checks(slicelab, folder):
    """DIMSE over TLS against an Orthanc that requires it (and a client certificate of the test CA): push, query,
    pull by C-GET and by C-MOVE (Orthanc connecting back over TLS); `listen` over TLS taking storescu +tls and
    sending its result to that Orthanc over TLS; plain or untrusted peers refused on both sides."""
    certs = folder / "certs"
    make_certificates(certs)
    port, http = 4243, 8043
    ORTHANCS.append(start_orthanc(folder, "orthanctls", port, http, tls=certs))
    remote = f"dicom+tls://ORTHANCTLS@127.0.0.1:{port}"
    identity = ["--tls-key", certs / "client.key", "--tls-cert", certs / "client.crt", "--tls-ca", certs / "ca.crt"]
    files = sorted(DEMO.glob("*.dcm"))
    demo = {pydicom.dcmread(f).SOPInstanceUID: f for f in files}
    series = sorted({pydicom.dcmread(f).SeriesInstanceUID for f in files})

    pushed = run(slicelab, "push", DEMO, "--to", remote, *identity)
    assert pushed.stdout.count("ok\t0x0000") == len(files), pushed.stdout
    assert len(rest("/instances", http)) == len(files)
    found = json.loads(run(slicelab, "query", remote, "--level", "series", "--json", *identity).stdout)
    assert sorted(m["SeriesInstanceUID"] for m in found) == series, found
    for name, extra in (("get", []), ("move", ["--move-destination", "SLICELAB", "--port", 11114])):
        out = folder / f"tls-{name}"
        run(slicelab, "pull", remote, series[0], "--out", out, *identity, *extra)
        got = sorted(out.rglob("*.dcm"))
        assert got and all(datasets_equal(p, demo[p.stem]) for p in got), (name, got)
    # Refused: the server's certificate not trusted; a plain association to the TLS port; no client certificate.
    untrusted = run(slicelab, "push", files[0], "--to", remote, "--tls-ca", certs / "other.crt", "--tls-key",
                    certs / "client.key", "--tls-cert", certs / "client.crt", expect=1)
    assert "certificate verify failed" in untrusted.stderr, untrusted.stderr
    run(slicelab, "push", files[0], "--to", f"dicom://ORTHANCTLS@127.0.0.1:{port}", "--timeout", "5", expect=1)
    anonymous = run(slicelab, "push", files[0], "--to", remote, "--tls-ca", certs / "ca.crt", expect=1)
    assert "ORTHANCTLS@127.0.0.1:4243" in anonymous.stderr, anonymous.stderr
    # DICOMweb over HTTPS: the same series, verified against --tls-ca; without it the test CA is not trusted.
    proxy = https_proxy(8443, http, certs)
    web = "https://127.0.0.1:8443/dicom-web"
    web_found = json.loads(run(slicelab, "query", web, "--level", "series", "--json", "--tls-ca",
                               certs / "ca.crt").stdout)
    assert sorted(m["SeriesInstanceUID"] for m in web_found) == series, web_found
    unverified = run(slicelab, "query", web, "--json", expect=1)
    assert web in unverified.stderr and "certificate" in unverified.stderr.lower(), unverified.stderr
    proxy.shutdown()
    print(f"pacs: over TLS (Orthanc requiring a client certificate): push, query, pull by C-GET and C-MOVE; an "
          "untrusted server certificate, a plain association and a missing client certificate refused; QIDO-RS "
          "over HTTPS verified against --tls-ca, refused without it")

    # listen over TLS: storescu +tls in, the SEG out to the TLS Orthanc over TLS; plain and untrusted callers out.
    spool = folder / "tls-spool"
    client_tls = ["+tls", certs / "client.key", certs / "client.crt", "+cf", certs / "ca.crt"]
    listener = start_listener(
        slicelab, folder, spool, "listen-tls.log", port=11115, send_to=remote,
        options=("--series-idle", "1", "--tls-key", certs / "server.key", "--tls-cert", certs / "server.crt",
                 "--tls-ca", certs / "ca.crt"), echo_options=client_tls)
    tls_storescu = ["storescu", *client_tls, "-aet", "STORESCU", "-aec", "SLICELAB", "127.0.0.1", "11115"]
    first = [f for f in files if pydicom.dcmread(f).SeriesInstanceUID == series[0]]
    run(*tls_storescu, *first)
    plain = run("storescu", "-aet", "STORESCU", "-aec", "SLICELAB", "127.0.0.1", "11115", first[0], expect=None)
    assert plain.returncode != 0, plain.stderr
    stranger = run("storescu", "+tls", certs / "other.key", certs / "other.crt", "+cf", certs / "ca.crt", "-aet",
                   "STORESCU", "-aec", "SLICELAB", "127.0.0.1", "11115", first[0], expect=None)
    assert stranger.returncode != 0, stranger.stderr
    segs = lambda: [s for s in rest("/series", http)
                    if rest(f"/series/{s}", http)["MainDicomTags"].get("Modality") == "SEG"]
    wait_for(lambda: len(segs()) == 1, "the SEG of the series sent over TLS at the TLS Orthanc")
    assert stop(listener) == 0, (folder / "listen-tls.log").read_text()[-2000:]
    status = json.loads(run(slicelab, "listen", "--spool", spool, "--status").stdout)
    assert status["results_sent"] == 1, status
    print("pacs: listen over TLS took storescu +tls, refused a plain caller and one with an untrusted certificate, "
          "and sent its SEG to Orthanc over TLS")


def checks(slicelab, folder):
    files = sorted(DEMO.glob("*.dcm"))
    demo = {pydicom.dcmread(f).SOPInstanceUID: f for f in files}
    studies = sorted({pydicom.dcmread(f).StudyInstanceUID for f in files})
    series = sorted({pydicom.dcmread(f).SeriesInstanceUID for f in files})

    # push: every instance reported stored; Orthanc holds them all.
    pushed = run(slicelab, "push", DEMO, "--to", REMOTE)
    assert pushed.stdout.count("ok\t0x0000") == len(files), pushed.stdout
    assert len(rest("/instances")) == len(files), rest("/instances")
    print(f"pacs: push stored {len(files)} instances")

    # query: studies and series as Orthanc lists them; findscu agrees.
    found = json.loads(run(slicelab, "query", REMOTE, "--json").stdout)
    assert [m["StudyInstanceUID"] for m in found] == studies, found
    assert int(found[0]["NumberOfStudyRelatedInstances"]) == len(files), found
    listed = json.loads(run(slicelab, "query", REMOTE, "--level", "series", "--study", studies[0], "--json").stdout)
    assert sorted(m["SeriesInstanceUID"] for m in listed) == series, listed
    orthanc_series = sorted(rest(f"/series/{s}")["MainDicomTags"]["SeriesInstanceUID"] for s in rest("/series"))
    assert orthanc_series == series, orthanc_series
    findscu = run("findscu", "-S", "-aet", "SLICELAB", "-aec", "ORTHANC", "-k", "QueryRetrieveLevel=SERIES",
                  "-k", f"StudyInstanceUID={studies[0]}", "-k", "SeriesInstanceUID", "127.0.0.1", DICOM_PORT)
    assert all(uid in findscu.stderr + findscu.stdout for uid in series), findscu.stderr[-2000:]
    none = json.loads(run(slicelab, "query", REMOTE, "--patient-id", "NOBODY*", "--json").stdout)
    assert none == [], none
    # QIDO-RS gives the same studies and series with the same keys as C-FIND.
    web_found = json.loads(run(slicelab, "query", WEB, "--json").stdout)
    assert [m["StudyInstanceUID"] for m in web_found] == studies, web_found
    for key in ("PatientID", "StudyDate", "NumberOfStudyRelatedInstances"):
        assert web_found[0].get(key) == found[0].get(key), (key, web_found[0], found[0])
    web_listed = json.loads(run(slicelab, "query", WEB, "--level", "series", "--study", studies[0], "--json").stdout)
    assert [m["SeriesInstanceUID"] for m in web_listed] == [m["SeriesInstanceUID"] for m in listed], web_listed
    print(f"pacs: query found {len(studies)} study and {len(series)} series, as Orthanc and findscu list them, "
          "over DIMSE and DICOMweb alike")

    # pull: each series, then the study, into DIR/<study>/<series>/<sop>.dcm, data sets equal to what was pushed.
    out = folder / "pulled"
    run(slicelab, "pull", REMOTE, *series, "--out", out)
    pulled = sorted(out.rglob("*.dcm"))
    assert len(pulled) == len(files), pulled
    for path in pulled:
        study, serie, sop = path.parts[-3], path.parts[-2], path.stem
        source = demo[sop]
        reference = pydicom.dcmread(source)
        assert (study, serie) == (reference.StudyInstanceUID, reference.SeriesInstanceUID), path
        assert datasets_equal(path, source), f"{path} differs from {source}"
    study_out = folder / "pulled-study"
    run(slicelab, "pull", REMOTE, studies[0], "--out", study_out)
    assert len(list(study_out.rglob("*.dcm"))) == len(files)
    assert not any(p.name.startswith(".incoming") for p in out.iterdir()), list(out.iterdir())
    web_out = folder / "pulled-web"
    run(slicelab, "pull", WEB, series[0], studies[0], "--out", web_out)
    web_pulled = sorted(web_out.rglob("*.dcm"))
    assert len(web_pulled) == len(files), web_pulled
    for path in web_pulled:
        assert datasets_equal(path, demo[path.stem]), f"{path} (WADO-RS) differs from {demo[path.stem]}"
    print(f"pacs: pull wrote {len(pulled)} instances by series and by study, over C-GET and WADO-RS, data sets "
          "equal to the pushed ones")

    # segment a pulled image, push the SEG back: Orthanc stores it as a Segmentation of the same study.
    first = pulled[0]
    seg = folder / "seg.dcm"
    run(slicelab, "segment", first, "--model", MODEL, "--out", seg)
    run(slicelab, "push", seg, "--to", REMOTE)
    segs = [s for s in rest("/series") if rest(f"/series/{s}")["MainDicomTags"].get("Modality") == "SEG"]
    assert len(segs) == 1, segs
    instance = rest(f"/series/{segs[0]}")["Instances"][0]
    tags = rest(f"/instances/{instance}/simplified-tags")
    assert tags["StudyInstanceUID"] == pydicom.dcmread(first).StudyInstanceUID, tags["StudyInstanceUID"]
    # The SEG read back over WADO-RS is the one written.
    seg_series = pydicom.dcmread(seg).SeriesInstanceUID
    back = folder / "seg-back"
    run(slicelab, "pull", WEB, seg_series, "--out", back)
    (seg_back,) = list(back.rglob("*.dcm"))
    assert datasets_equal(seg_back, seg), "the SEG read back over WADO-RS differs"
    # STOW-RS: an RT Structure Set of the same image, stored over DICOMweb, found over DIMSE.
    rtstruct = folder / "rt.dcm"
    run(slicelab, "segment", first, "--model", MODEL, "--out", rtstruct, "--dicom-output", "rtstruct")
    stored = run(slicelab, "push", rtstruct, "--to", WEB)
    assert stored.stdout.startswith("ok\t0x0000"), stored.stdout
    rt_series = json.loads(run(slicelab, "query", REMOTE, "--level", "series", "--study", studies[0], "--json").stdout)
    assert "RTSTRUCT" in [m.get("Modality") for m in rt_series], rt_series
    print("pacs: a pulled image's SEG pushed back (C-STORE) and read back (WADO-RS) identical; its RTSTRUCT stored "
          "over STOW-RS")

    # DCMTK's storescp as a second storage peer: every pushed file arrives with the same data set.
    received = folder / "storescp"
    received.mkdir()
    storescp = subprocess.Popen(["storescp", "-aet", "STORESCP", "-od", str(received), "11120"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: subprocess.run(["echoscu", "-aec", "STORESCP", "127.0.0.1", "11120"],
                                        capture_output=True).returncode == 0, "storescp to answer C-ECHO", 30)
        run(slicelab, "push", DEMO, "--to", "dicom://STORESCP@127.0.0.1:11120")
    finally:
        stop(storescp)
    stored = {pydicom.dcmread(p).SOPInstanceUID: p for p in received.iterdir()}
    assert sorted(stored) == sorted(demo), sorted(stored)
    assert all(datasets_equal(stored[uid], demo[uid]) for uid in demo)
    print(f"pacs: push to DCMTK's storescp stored all {len(demo)} instances, data sets equal")

    # refusals: an AE title the PACS does not know, an unreachable port, a remote that is no remote.
    refused = run(slicelab, "query", REMOTE, "--calling-aet", "INTRUDER", expect=1)
    assert "ORTHANC@127.0.0.1:4242" in refused.stderr, refused.stderr
    closed = run(slicelab, "query", "dicom://ORTHANC@127.0.0.1:4299", "--timeout", "5", expect=1)
    assert "ORTHANC@127.0.0.1:4299" in closed.stderr, closed.stderr
    bad = run(slicelab, "query", "ftp://x", expect=1)
    assert "unknown scheme 'ftp'" in bad.stderr, bad.stderr
    escape = run(slicelab, "pull", REMOTE, "../1.2", "--out", folder / "x", expect=1)
    assert "is not a DICOM UID" in escape.stderr, escape.stderr
    print("pacs: unknown AE title, closed port, bad remote and a UID with ../ refused with one line each")


if __name__ == "__main__":
    main()
