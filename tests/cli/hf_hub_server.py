#!/usr/bin/env python3
"""A stand-in for the Hugging Face hub (HF_ENDPOINT) that refuses as the hub does: repositories
under `gated/` answer 403 with X-Error-Code GatedRepo, every other one 401 with RepoNotFound
(the headers huggingface_hub's hf_raise_for_status reads). Prints its port, then serves."""
import http.server


class Refusals(http.server.BaseHTTPRequestHandler):
    def refuse(self):
        gated = "/gated/" in self.path
        self.send_response(403 if gated else 401)
        self.send_header("X-Error-Code", "GatedRepo" if gated else "RepoNotFound")
        self.send_header("X-Error-Message", "refused by the test hub")
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET = refuse

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Refusals)
print(server.server_address[1], flush=True)
server.serve_forever()
