# vipu client configuration of the user 'alice' (holds its access key: keep it private)
api-host = "127.0.0.1"
api-port = "37401"
api-user-id = "alice"
api-access-key = "V580oF6D8Jnhc_LFfxwfto"
api-tls-ca = "/tmp/vipu-it-snIMmD/tls/client/ca.pem"
api-tls-cert = "/tmp/vipu-it-snIMmD/tls/client/cert.pem"
api-tls-key = "/tmp/vipu-it-snIMmD/tls/client/key.pem"
