package dev.mlxring.ingress.http;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * Sends only the head of a POST that declares a {@code Content-Length} and then waits for the
 * answer without sending the body: the way to test a 413 that must come before the body is read.
 * (A client that streams a body past the limit races the server's close; the JDK client then
 * loses the 413 to a broken pipe.)
 */
final class DeclaredBody {
    private DeclaredBody() {}

    /** The raw response (status line, headers, body) to a POST of {@code path} declaring {@code length} bytes. */
    static String post(int port, String path, long length, String... headers) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            StringBuilder head = new StringBuilder("POST ")
                    .append(path)
                    .append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                    .append("Content-Type: application/json\r\nContent-Length: ")
                    .append(length)
                    .append("\r\n");
            for (int i = 0; i + 1 < headers.length; i += 2) {
                head.append(headers[i]).append(": ").append(headers[i + 1]).append("\r\n");
            }
            OutputStream out = s.getOutputStream();
            out.write(head.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buf = new byte[4096];
            int n;
            // The server closes the connection after its answer (the declared body stays unread).
            while ((n = in.read(buf)) > 0) {
                got.write(buf, 0, n);
            }
            return got.toString(StandardCharsets.UTF_8);
        }
    }

    /** The JSON body of a raw response. */
    static String body(String response) {
        int i = response.indexOf("\r\n\r\n");
        return i < 0 ? "" : response.substring(i + 4);
    }
}
