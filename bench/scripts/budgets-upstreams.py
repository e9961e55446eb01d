import socket, threading, http.server, sys, time
# 127.0.0.1:18091 accepts and never answers (a hanging openweather); 18092 answers like wttr.
hs = socket.socket(); hs.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); hs.bind(("127.0.0.1", 18091)); hs.listen(100)
held = []
def hang():
    while True:
        c, _ = hs.accept(); held.append(c)
threading.Thread(target=hang, daemon=True).start()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b'{"current_condition":[{"temp_C":"7"}]}'
        self.send_response(200); self.send_header("Content-Type","application/json"); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", 18092), H).serve_forever()
