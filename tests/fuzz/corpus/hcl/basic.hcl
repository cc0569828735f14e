api-host = "localhost"
api-port = 8090
