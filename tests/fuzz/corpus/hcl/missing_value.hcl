api-port =
