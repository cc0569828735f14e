# vipu client configuration of the user 'bob' (holds its access key: keep it private)
api-host = "127.0.0.1"
api-port = "35485"
api-user-id = "bob"
api-access-key = "aXAoEryE-MBrtVMZi_o7oz"
api-tls-ca = "/tmp/vipu-it-Gteem5/tls/client/ca.pem"
api-tls-cert = "/tmp/vipu-it-Gteem5/tls/client/cert.pem"
api-tls-key = "/tmp/vipu-it-Gteem5/tls/client/key.pem"
